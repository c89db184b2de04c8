"""On the GPU (marker gpu): every variant right on odd shapes, planted bugs caught."""

import importlib.util
import json
import re
from pathlib import Path

import pytest
from conftest import write_kernel
from typer.testing import CliRunner

from cudabench.cli import app
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions

pytestmark = pytest.mark.gpu
ODD_SHAPES = [(1,), (3, 5), (1000003,), (442367, 129), (442368, 128), (1 << 20,), (1 << 30,)]
TORCH = ("torch",) if importlib.util.find_spec("torch") else ()  # its baseline rows, when importable
ONCE = TimingOptions(warmup=0, min_samples=1, min_time_s=0.0, max_time_s=0.0)
QUICK = ["--warmup", "0", "--min-samples", "2", "--min-time", "0", "--max-time", "0.05"]

DROP_TAIL = """\
// cudabench:
//   variant: droptail
//   entry: droptail
//   block: 256
//   grid: elements
//   about: planted bug - a thread per row reads whole groups of 4 and drops the rest
extern "C" __global__ void droptail(const float* x, float* out, float* partials,
                                    unsigned* counters, long long rows, long long cols,
                                    int group, int chunks) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* p = x + row * cols;
  float s = 0.0f;
  for (long long c = 0; c + 3 < cols; c += 4) s += (p[c] + p[c + 1]) + (p[c + 2] + p[c + 3]);
  out[row] = s;  // the cols % 4 tail is never added
}
"""


def compiled_ahead(runner, variants, dtype="float32"):
    """Every configuration of `variants` compiled by parallel nvcc processes before the job
    runs: the runner then loads each from the compile cache instead of compiling one after
    another (a test over every configuration of a space spent most of its time there)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from cudabench.build.compile import compile_variant
    from cudabench.build.nvcc import CompileError

    def build(variant):
        try:
            compile_variant(variant, runner.device.arch, dtype)
        except CompileError:
            pass  # the job's row says so

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(build, [v for v in variants if dtype in v.dtypes]))
    return tuple(variants)


@pytest.fixture(scope="module")
def runner():
    from cudabench.backends.cupy_backend import CupyBackend
    from cudabench.measure.runner import Runner

    return Runner(CupyBackend())


@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_every_builtin_variant_is_right(runner, shape):
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover

    variants, problems = discover("reduce", [BUILTIN_KERNELS])
    assert not problems
    rows = runner.run_job(CaseJob(Case("reduce", shape), tuple(variants), ("cupy",), ONCE))
    bad = [(r.variant, r.status.value, r.error) for r in rows if r.status is not Status.OK]
    assert not bad
    assert all(r.time_us > 0 and r.max_abs_err <= r.tolerance for r in rows)


CATALOGUE_SHAPES = {
    "reduce_max": [(1,), (3, 5), (1000003,), (442367, 129), (4099, 2053), (1 << 24,)],
    "reduce_scale": [(7, 3), (1001, 130), (513, 1023), (33, 4097), (64, 8192), (4096, 128)],
    "softmax": [(3, 5), (1001, 129), (77, 1024), (31, 4099), (5, 32768), (1000003,), (1 << 22,)],
    "add": [(1,), (3,), (1000003,), (1 << 24,)],
    "sigmoid": [(1,), (1000003,), (1 << 24,)],
    "relu": [(1,), (1000003,), (1 << 24,)],
    "transpose": [(1, 1), (33, 31), (1, 1000), (4097, 1025), (2048, 2048)],
    "gemv": [(1, 1), (100003, 3), (3, 100003), (4097, 1023), (1024, 4096)],
    "sgemm": [(1, 1, 1), (129, 127, 3), (1000, 1001, 999), (256, 384, 512), (3, 300, 1000)],
}
CATALOGUE = [(op, shape) for op, shapes in CATALOGUE_SHAPES.items() for shape in shapes]


@pytest.mark.parametrize("op, shape", CATALOGUE, ids=[f"{op}-{'x'.join(map(str, s))}" for op, s in CATALOGUE])
def test_every_catalogue_variant_is_right_on_odd_shapes(runner, op, shape):
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import get_op

    variants, problems = discover(op, [BUILTIN_KERNELS])
    assert variants and not problems
    variants = [v for v in variants if "float32" in v.dtypes]  # the 16-bit-only: below
    baselines = tuple(get_op(op).baselines())
    rows = runner.run_job(CaseJob(Case(op, shape), tuple(variants), baselines, ONCE))
    bad = [(r.variant, r.status.value, r.error) for r in rows if r.status not in (Status.OK, Status.N_A)]
    assert not bad
    ran = [r for r in rows if r.status is Status.OK and not r.is_baseline]
    assert ran and all(r.time_us > 0 and r.max_abs_err <= r.tolerance for r in ran)


ISSUE_ODD = {
    "reduce": [(1,), (31,), (33,), (65537, 3), (442367, 129)],
    "reduce_max": [(1,), (31,), (65537, 3), (442367, 129)],
    "reduce_scale": [(31, 33), (65537, 3), (442367, 129)],
    "softmax": [(1, 31), (33,), (65537, 3), (442367, 129), (31, 4099), (5, 32768)],
    "add": [(1,), (31,), (33,), (1000003,)],
    "sigmoid": [(31,), (1000003,)],
    "relu": [(33,), (1000003,)],
    "transpose": [(33, 31), (4097, 1025)],
    "gemv": [(65537, 3), (3, 100003), (4097, 1023)],
}
SIXTEEN = [
    (op, shape, dtype)
    for op, shapes in ISSUE_ODD.items()
    for shape in shapes + CATALOGUE_SHAPES.get(op, [])[-2:]
    for dtype in ("float16", "bfloat16")
]


@pytest.mark.parametrize(
    "op, shape, dtype", SIXTEEN, ids=[f"{o}-{'x'.join(map(str, s))}-{d}" for o, s, d in SIXTEEN]
)
def test_every_16_bit_variant_is_right_on_odd_shapes(runner, op, shape, dtype):
    """Every built-in variant that declares the dtype validates against the float64
    reference of its 16-bit inputs; the library baselines run too (their failures are the
    library's, reported but not asserted)."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import get_op

    variants = [v for v in discover(op, [BUILTIN_KERNELS])[0] if dtype in v.dtypes]
    assert variants
    rows = runner.run_job(
        CaseJob(Case(op, shape, dtype), tuple(variants), tuple(get_op(op).baselines()), ONCE)
    )
    bad = [
        (r.variant, r.status.value, r.error)
        for r in rows
        if not r.is_baseline and r.status not in (Status.OK, Status.N_A)
    ]
    assert not bad
    assert any(r.status is Status.OK and not r.is_baseline for r in rows)


# Issue 14: the variants it added (or gave a parameter) and kept, at every configuration of the grids
# below, on the issue's odd shapes, in every dtype they declare; 2^30 + 3 at the defaults.
NEW14 = {
    "softmax": {
        "online_vec": {"UNROLL": (2, 8), "NORM_UNROLL": (2, 8), "STREAM_LOADS": (0, 1)},
        "online_tile": {"STATS_UNROLL": (4, 8), "UNROLL": (1, 4), "NORM_HINTS": (0, 1)},
    },
    "gemv": {"vec4": {"LOADS": (2, 4, 8)}},
    "transpose": {"vec": {"BLOCK": (256, 512), "GROUP": (0, 8, 32)}},
}
ODD14 = [(1,), (31,), (33,), (65537, 3), (442367, 129)]
MATRIX14 = {  # 2-D ops: odd sides, whole packs (4 and 8) and not, tall, wide, partial tiles
    "gemv": [(1, 1), (31, 33), (65537, 3), (442367, 129), (3, 100003)],
    "transpose": [(1, 1), (31, 33), (65537, 3), (3, 65537), (8, 8), (4096, 4104), (4097, 1025), (1000, 64)],
}
CASES14 = [
    (op, shape, dtype)
    for op in NEW14
    for shape in MATRIX14.get(op, ODD14 + [((1 << 30) + 3,)])
    for dtype in ("float32", "float16", "bfloat16")
]


@pytest.mark.parametrize(
    "op, shape, dtype", CASES14, ids=[f"{o}-{'x'.join(map(str, s))}-{d}" for o, s, d in CASES14]
)
def test_the_issue_14_variants_are_right_on_odd_shapes(runner, op, shape, dtype):
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.space import grid

    big = max(shape) > 1 << 29
    chosen = [v for v in discover(op, [BUILTIN_KERNELS])[0] if v.name in NEW14[op] and dtype in v.dtypes]
    assert len(chosen) == len(NEW14[op])
    configured = tuple(c for v in chosen for c in ([v] if big else grid(v, NEW14[op][v.name])))
    compiled_ahead(runner, configured, dtype)
    rows = runner.run_job(CaseJob(Case(op, shape, dtype), configured, (), ONCE))
    bad = [(r.label, r.status.value, r.error) for r in rows if r.status not in (Status.OK, Status.N_A)]
    assert not bad
    assert all(r.max_abs_err <= r.tolerance for r in rows if r.status is Status.OK)


# softmax `cluster` (sm_90) at every cluster size and block: rows of whole 16-byte packs from
# 8 columns to 32768 (fewer packs than threads, a cluster's last block with none, a thread with
# 8), and the issue's odd shapes, which it must leave N/A (cols % 8)
CLUSTER_SHAPES = [
    (1, 8),
    (3, 1000),
    (31, 32768),
    (33, 8184),
    (65537, 8),
    (442367, 128),
    (1,),
    (31,),
    (33,),
    (65537, 3),
    (442367, 129),
]
CLUSTER_CASES = [(s, d) for s in CLUSTER_SHAPES for d in ("float32", "float16", "bfloat16")]


def run_rows_variant(runner, name, space, shape, dtype):
    """The rows of softmax variant `name` at every configuration of `space`, once each:
    OK and within tolerance on rows of whole 16-byte packs, N/A on the others (cols % 8)."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.space import grid

    (v,) = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == name]
    configured = compiled_ahead(runner, grid(v, space), dtype)
    rows = runner.run_job(CaseJob(Case("softmax", shape, dtype), tuple(configured), (), ONCE))
    assert len(rows) == len(configured)
    whole_packs = shape[-1] % 8 == 0
    assert all(r.status is (Status.OK if whole_packs else Status.N_A) for r in rows), [
        (r.label, r.status.value, r.error) for r in rows
    ]
    assert all(r.max_abs_err <= r.tolerance for r in rows if r.status is Status.OK)
    return len(configured)


@pytest.mark.parametrize(
    "shape, dtype", CLUSTER_CASES, ids=[f"{'x'.join(map(str, s))}-{d}" for s, d in CLUSTER_CASES]
)
def test_softmax_cluster_is_right_at_every_cluster_size(runner, shape, dtype):
    if runner.device.sm_version < 90:
        pytest.skip("thread-block clusters need sm_90")
    space = {"CLUSTER": (2, 4, 8), "BLOCK": (128, 256, 512)}
    assert run_rows_variant(runner, "cluster", space, shape, dtype) == 6  # BLOCK x CLUSTER >= 1024


# softmax `block_hybrid` at every block and register share: the same rows as `cluster`, with
# shared parts of 0 to 24 packs a thread (8 columns: one pack, all in registers; 32768 floats
# at BLOCK 256 and REG_PACKS 4: 28 packs in 112 KiB of shared memory, opted in)
@pytest.mark.parametrize(
    "shape, dtype", CLUSTER_CASES, ids=[f"{'x'.join(map(str, s))}-{d}" for s, d in CLUSTER_CASES]
)
def test_softmax_block_hybrid_is_right_at_every_register_share(runner, shape, dtype):
    space = {"BLOCK": (256, 512), "REG_PACKS": (4, 8)}
    assert run_rows_variant(runner, "block_hybrid", space, shape, dtype) == 4


# softmax `block_reg` with its first wave started in step and staggered (rows of up to 32768
# columns; the delay must change nothing but when a block starts; float32 keeps each
# exponential in place of its element, 16 bits compute them again)
@pytest.mark.parametrize(
    "shape, dtype", CLUSTER_CASES, ids=[f"{'x'.join(map(str, s))}-{d}" for s, d in CLUSTER_CASES]
)
def test_softmax_block_reg_is_right_staggered_or_not(runner, shape, dtype):
    space = {"STAGGER_NS": (0, 1000), "PHASES": (2, 8)}
    assert run_rows_variant(runner, "block_reg", space, shape, dtype) == 4


@pytest.mark.slow  # one of the few long ones: `-m 'gpu and not slow'` leaves it out
def test_seed_000_pasted_as_printed_runs_as_a_template_entry(tmp_path):
    """Seed 000's BlockReduce kernel with only a header added, through the CLI."""
    import json
    import subprocess
    import sys

    fixture = Path(__file__).parent / "fixtures" / "seed000"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudabench",
            "run",
            "reduce_scale",
            "--kernels",
            str(fixture),
            "-s",
            "442368x128",
            "-s",
            "1001x130",
            "-v",
            "seed000_block",
            "--min-time",
            "0.02",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    ours = [r for r in rows if r["variant"] == "seed000_block"]
    assert len(ours) == 2 and all(r["status"] == "OK" for r in ours)


FLT_MIN_MAX = """\
// cudabench:
//   variant: fltmin
//   entry: fltmin
//   block: 256
//   grid: segments
//   about: planted bug - seed 001's start value FLT_MIN for a max
#include <cfloat>
#include "common/reduce.cuh"

extern "C" __global__ void fltmin(const float* x, float* out, float* p, unsigned* c,
                                  long long rows, long long cols, int group, int chunks) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (group == 32) {  // a thread per row, serially: enough to show the wrong start
    for (long long r = row; r < rows; r += (long long)gridDim.x * blockDim.x) {
      float m = FLT_MIN;
      for (long long k = 0; k < cols; ++k) m = fmaxf(m, x[r * cols + k]);
      out[r] = m;
    }
  } else if (blockIdx.x == 0 && threadIdx.x == 0) {
    for (long long r = 0; r < rows; ++r) {
      float m = FLT_MIN;
      for (long long k = 0; k < cols; ++k) m = fmaxf(m, x[r * cols + k]);
      out[r] = m;
    }
  }
}
"""


def test_flt_min_start_value_fails_on_negative_rows(kernel_dir, tmp_path):
    kernel_dir.mkdir()
    (kernel_dir / "fltmin.cu").write_text(FLT_MIN_MAX)
    out = tmp_path / "m.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "reduce_max",
            "-s",
            "3000x64",
            "-s",
            "1000",
            "--kernels",
            str(kernel_dir),
            *QUICK,
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 1
    rows = {(r["shape"], r["variant"]): r for r in json.loads(out.read_text())["rows"]}
    assert rows[("3000x64", "fltmin")]["status"] == "FAIL"
    assert rows[("1000", "fltmin")]["status"] == "FAIL"  # a 1-D input is all negative
    assert rows[("3000x64", "x4")]["status"] == "OK"


def test_planted_tail_dropper_fails_and_exit_is_1(kernel_dir, tmp_path):
    (kernel_dir).mkdir()
    (kernel_dir / "droptail.cu").write_text(DROP_TAIL)
    result = CliRunner().invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "442367x129",
            "-s",
            "442368x128",
            "-s",
            "4099",
            "--kernels",
            str(kernel_dir),
            *QUICK,
            "-o",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1, result.output
    rows = {
        (r["shape"], r["variant"]): r for r in json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    }
    assert rows[("442367x129", "droptail")]["status"] == "FAIL"
    assert rows[("4099", "droptail")]["status"] == "FAIL"
    assert rows[("442368x128", "droptail")]["status"] == "OK"  # no tail to drop
    others = [r for (s, v), r in rows.items() if v != "droptail"]
    assert others and all(r["status"] == "OK" for r in others)


def test_compile_error_is_a_row_and_others_run(kernel_dir, tmp_path):
    write_kernel(kernel_dir, "broken", 'extern "C" __global__ void broken() { int x = ; }\n')
    result = CliRunner().invoke(
        app, ["run", "reduce", "-s", "4097", "--kernels", str(kernel_dir), *QUICK, "-o", str(tmp_path)]
    )
    assert result.exit_code == 1
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    broken = next(r for r in rows if r["variant"] == "broken")
    assert broken["status"] == "COMPILE_ERROR" and "broken.cu(" in broken["error"]
    assert sum(r["status"] == "OK" for r in rows) == 6 + len(TORCH)


def test_cold_mode_times_single_launches(tmp_path):
    result = CliRunner().invoke(
        app, ["run", "reduce", "-s", "442368x128", "-v", "float4", "--cold", *QUICK, "-o", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    assert all(r["method"] == "single" and r["batch"] == 1 for r in rows)


CANDIDATE = """\
// cudabench:
//   variant: candidate
//   entry: candidate
//   block: 256
//   grid: segments
//   requires: {{max_cols: 1024}}
//   about: test kernel for compare ({what})
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
candidate(const float* __restrict__ x, float* __restrict__ out, float* partials,
          unsigned* counters, long long rows, long long cols, int group, int chunks) {{
  cb::reduce_short_rows<true>(x, out, rows, cols);
{extra}}}
"""


@pytest.mark.slow  # one of the few long ones: `-m 'gpu and not slow'` leaves it out
def test_compare_finds_a_planted_slower_variant(tmp_path):
    runs = {}
    for name, extra in (
        ("fast", ""),
        ("slow", "  cb::reduce_short_rows<false>(x, out, rows, cols);  // a second pass over memory\n"),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "candidate.cu").write_text(CANDIDATE.format(what=name, extra=extra))
        runs[name] = tmp_path / f"{name}.json"
        result = CliRunner().invoke(
            app,
            [
                "run",
                "reduce",
                "-s",
                "442368x128",
                "-v",
                "candidate",
                "--kernels",
                str(folder),
                "--min-samples",
                "20",
                "-o",
                str(runs[name]),
            ],
        )
        assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        app, ["compare", str(runs["fast"]), str(runs["slow"]), "--json", "--fail-on-regression"]
    )
    assert result.exit_code == 1
    verdicts = {r["variant"]: r for r in json.loads(result.stdout)}
    assert verdicts["candidate"]["verdict"] == "SLOWER"
    assert verdicts["candidate"]["change"] > 0.5  # two passes over 226 MB instead of one
    same = CliRunner().invoke(app, ["compare", str(runs["fast"]), str(runs["fast"]), "--json"])
    assert {r["verdict"] for r in json.loads(same.stdout)} == {"SAME"}


def test_interleaved_run_times_every_variant(tmp_path):
    out = tmp_path / "inter.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "442368x128",
            "-v",
            "float4",
            "-v",
            "shuffle",
            "--interleave",
            *QUICK,
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["meta"]["timing"]["interleave"] is True
    rows = {r["variant"]: r for r in doc["rows"]}
    assert set(rows) == {"float4", "shuffle", "cupy", *TORCH}
    assert all(r["status"] == "OK" and r["time_us"] > 0 for r in rows.values())
    assert rows["float4"]["time_us"] < rows["cupy"]["time_us"]


@pytest.mark.slow  # one of the few long ones: `-m 'gpu and not slow'` leaves it out
def test_profile_profiles_one_launch_per_variant_and_counts_dram_bytes(tmp_path):
    import subprocess
    import sys

    from cudabench.execution.ncu import NcuError, find_ncu, import_command, parse_raw_csv

    try:
        ncu = find_ncu()
    except NcuError as exc:
        pytest.skip(str(exc))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudabench",
            "profile",
            "reduce",
            "--shape",
            "442368x128",
            "--no-time",
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (report,) = tmp_path.glob("*.ncu-rep")
    kernels = parse_raw_csv(
        subprocess.run(import_command(ncu, report), capture_output=True, text=True, check=True).stdout
    )
    rows = json.loads(next(tmp_path.glob("*.json")).read_text())["rows"]
    names = [r["variant"] for r in rows]
    assert sorted(names) == sorted(["atomic", "cupy", "float4", "naive", "shared", "shuffle", *TORCH])
    # exactly one launch per (variant, shape), each in its own range, nothing else profiled
    assert len(kernels) == len(rows)
    labels = [r["variant"] + (f"[{r['params']}]" if r.get("params") else "") for r in rows]
    assert sorted(k.ranges[1] for k in kernels) == sorted(labels)  # float4[BLOCK=256,...]
    assert all(r["ncu"]["kernels"] == 1 for r in rows)
    float4 = next(r for r in rows if r["variant"] == "float4")
    input_bytes = 442368 * 128 * 4  # 226 MB, read once
    assert abs(float4["ncu"]["dram_read_bytes"] / input_bytes - 1) < 0.05
    # cold: one pass over 226 MB after a flush hits L2 on few of its read sectors, and is
    # not flagged (ncu.COLD_L2_HIT_PCT; written without a GPU at hand, 2026-11-25)
    assert float4["ncu"]["l2_hit_pct"] is not None and float4["ncu"]["l2_hit_pct"] < 50
    assert "was the flush effective" not in float4["notes"]


FAULT_HEADER = """\
// cudabench:
//   variant: {name}
//   entry: {entry}
//   block: 256
//   grid: segments
//   about: planted fault ({name})
"""
FAULTS = {
    "oob": (
        "oob",
        """
extern "C" __global__ void oob(const float* x, float* out, float* p, unsigned* c, long long rows,
                               long long cols, int group, int chunks) {
  out[rows + (1ll << 36)] = 1.0f;  // far past the end: an illegal address
}""",
    ),
    "spin": (
        "spin",
        """
extern "C" __global__ void spin(const float* x, float* out, float* p, unsigned* c, long long rows,
                                long long cols, int group, int chunks) {
  while (clock64() >= 0) {}  // never ends
}""",
    ),
    "broken": (
        "broken",
        """
extern "C" __global__ void broken(const float* x) { this is not C++ }""",
    ),
    "noentry": (
        "not_in_this_file",
        """
extern "C" __global__ void something_else(const float* x) {}""",
    ),
}


@pytest.mark.slow  # one of the few long ones: `-m 'gpu and not slow'` leaves it out
def test_planted_faults_in_one_sweep_beside_good_variants(tmp_path, kernel_dir):
    import subprocess
    import sys

    kernel_dir.mkdir()
    for name, (entry, body) in FAULTS.items():
        (kernel_dir / f"{name}.cu").write_text(FAULT_HEADER.format(name=name, entry=entry) + body)
    (kernel_dir / "droptail.cu").write_text(DROP_TAIL)
    (kernel_dir / "badheader.cu").write_text("// cudabench:\n//   variant: [x\n//   entry: y\n")
    out = tmp_path / "faults.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudabench",
            "run",
            "reduce",
            "-s",
            "4096x129",
            "-s",
            "1000003",
            "--kernels",
            str(kernel_dir),
            "--timeout",
            "20",
            *QUICK,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["meta"]["complete"] is True
    rows = {(r["shape"], r["variant"]): r for r in doc["rows"]}
    for shape in ("4096x129", "1000003"):
        assert rows[(shape, "oob")]["status"] == "CRASH"
        assert "cudaErrorIllegalAddress" in rows[(shape, "oob")]["error"]
        assert rows[(shape, "spin")]["status"] == "TIMEOUT"
        assert rows[(shape, "droptail")]["status"] == "FAIL"
        assert rows[(shape, "broken")]["status"] == "COMPILE_ERROR"
        assert "broken.cu(" in rows[(shape, "broken")]["error"]  # nvcc's file and line
        assert rows[(shape, "noentry")]["status"] == "COMPILE_ERROR"
        for good in ("atomic", "float4", "naive", "shared", "shuffle", "cupy"):
            assert rows[(shape, good)]["status"] == "OK", rows[(shape, good)]["error"]
    assert re.search(r"badheader\.cu:\d+: header is not valid YAML", proc.stderr)


def test_multi_gpu_sweep_uses_every_gpu(tmp_path):
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("one GPU: --devices all runs on it alone")
    out = tmp_path / "multi.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "2^24",
            "-s",
            "2^25",
            "-s",
            "2^26",
            "-s",
            "2^27",
            "--devices",
            "all",
            *QUICK,
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert len({r["device"] for r in doc["rows"]}) >= 2


def test_timeit_times_a_cupy_call_and_a_cold_one_takes_longer():
    import cupy as cp

    import cudabench

    x = cp.random.default_rng(0).random(1 << 22, dtype=cp.float32)  # 16 MiB: fits in L2
    hot = cudabench.timeit(lambda: x.sum(), min_time_s=0.05)
    cold = cudabench.timeit(lambda: x.sum(), cold=True, min_time_s=0.05)
    assert hot.method == "graph" and cold.method == "single"
    assert 0 < hot.median_ms < cold.median_ms < 1.0


def test_a_backend_made_later_does_not_take_the_runners_stream(runner):
    """cudabench.timeit makes a backend, and so its stream current; the module's runner, used
    after it, must still order its inputs, zeroing and checks with its launches (in one full
    run of this file, on an H200, the rows after timeit came out wrong or ERROR)."""
    import cupy as cp

    import cudabench
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover

    x = cp.ones(1 << 20, dtype=cp.float32)
    cudabench.timeit(lambda: x.sum(), min_time_s=0.01)
    timing = TimingOptions(warmup=1, min_samples=20, min_time_s=0.01, max_time_s=0.5)
    reads = [v for v in discover("stream_read", [BUILTIN_KERNELS])[0]]  # init: zero, atomicAdd
    rows = runner.run_job(CaseJob(Case("stream_read", (65537,)), tuple(reads), (), timing))
    assert [r.status for r in rows] == [Status.OK] * len(rows), [r.error for r in rows]


def test_the_kernel_clock_times_each_launch_and_leaves_the_gaps_out(runner):
    """CUPTI's records on the GPU: a graph of short launches gives a sample a launch, a
    cold single launch one; a three-kernel variant's span holds its gaps, its summed
    durations do not; the events of the same samples read more than the kernels."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover

    both = TimingOptions(warmup=1, min_samples=20, min_time_s=0.01, max_time_s=0.5, timer="both")
    float4 = [v for v in discover("reduce", [BUILTIN_KERNELS])[0] if v.name == "float4"]
    (hot,) = runner.run_job(CaseJob(Case("reduce", (1 << 20,)), tuple(float4), (), both))
    assert hot.status is Status.OK and hot.timer == "cupti" and hot.method == "graph"
    assert hot.samples >= hot.batch > 1 and hot.samples % hot.batch == 0
    assert hot.kernels_us == pytest.approx(hot.time_us, rel=1e-6)
    assert 0.5 < hot.time_us and hot.events_us > 0.5  # back to back, events may read less
    three = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == "three_pass"]
    cold = TimingOptions(cold=True, warmup=1, min_samples=10, min_time_s=0, max_time_s=0.5, timer="both")
    rows = runner.run_job(CaseJob(Case("softmax", (1 << 24,)), tuple(three), ("cupyx",), cold))
    assert [r.status for r in rows] == [Status.OK, Status.OK], [r.error for r in rows]
    mine, library = rows  # cupyx's softmax: several CuPy kernels a call, count not known
    assert mine.method == "single" and mine.samples == 10 and mine.timer == "cupti"
    assert mine.kernels_us < mine.time_us < mine.events_us
    assert library.timer == "cupti" and library.kernels_us <= library.time_us < library.events_us


def test_run_with_timer_both_on_the_workers(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "2^20",
            "-v",
            "float4",
            "-v",
            "shuffle",
            "--timer",
            "both",
            *QUICK,
            "-o",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "events µs" in result.stdout and "kernel clock (CUPTI records)" in " ".join(result.stdout.split())
    (path,) = tmp_path.glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["meta"]["timing"]["timer"] == "both" and doc["meta"]["notes"] == []
    assert all(r["timer"] == "cupti" and r["events_us"] > 0 for r in doc["rows"])


@pytest.mark.parametrize("op", ["stream_read", "stream_write", "stream_copy", "stream_triad", "fma"])
@pytest.mark.parametrize("n", [1, 31, 33, 65537, (1 << 20) + 3])
def test_the_ceilings_ops_are_right_on_odd_sizes(runner, op, n):
    """Every configuration of the ceilings' grids, and the library references."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.space import grid
    from cudabench.record.ceilings import variant_grid

    variants = discover(op, [BUILTIN_KERNELS])[0]
    configured = compiled_ahead(runner, [c for v in variants for c in grid(v, variant_grid(v))])
    from cudabench.ops.registry import get_op

    rows = runner.run_job(CaseJob(Case(op, (n,)), configured, tuple(get_op(op).baselines()), ONCE))
    bad = [(r.label, r.status.value, r.error) for r in rows if r.status is not Status.OK]
    assert not bad


@pytest.mark.parametrize("n", [1, 3, 4, 1027, 65537, 3 * 1024 * 11 + 5, (1 << 22) + 1])
def test_the_bulk_copy_is_right_at_every_configuration(runner, n):
    """stream_copy bulk (sm_90): a body of whole 16-byte vectors in CHUNK-byte bulk copies
    (the last chunk short; some blocks with no chunk, some with more than STAGES), the rest
    element by element, at every configuration of its space."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import get_op
    from cudabench.ops.space import grid

    if runner.device.sm_version < 90:
        pytest.skip("bulk copies need sm_90")
    (bulk,) = [v for v in discover("stream_copy", [BUILTIN_KERNELS])[0] if v.name == "bulk"]
    configured = compiled_ahead(runner, grid(bulk, dict(bulk.params)))
    assert len(configured) > 20
    job = CaseJob(Case("stream_copy", (n,)), configured, tuple(get_op("stream_copy").baselines()), ONCE)
    rows = runner.run_job(job)
    assert len(rows) == len(configured) + len(get_op("stream_copy").baselines())
    bad = [(r.label, r.status.value, r.error) for r in rows if r.status is not Status.OK]
    assert not bad


def test_ceilings_on_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CEILINGS", str(tmp_path / "c.json"))
    result = CliRunner().invoke(app, ["ceilings", *QUICK, "-o", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    from cudabench.record import ceilings

    (entry,) = ceilings.load(tmp_path / "c.json")
    assert 0 < entry.copy_gbps and 0 < entry.read_gbps and entry.fma_gflops > 0
    # beside the stream ops, the library references of reduce, add and relu, all correct
    from cudabench.record.results import read_results

    (rows_file,) = (tmp_path / "m").glob("*_ceilings.json")
    _, rows = read_results(rows_file)
    others = [r for r in rows if r.op in ceilings.MIX_REFERENCES.values()]
    assert {r.op for r in others} == {"reduce", "add", "relu"}
    assert all(r.is_baseline and r.status is Status.OK for r in others)


_READ_ALL = r"""
extern "C" __global__ void read_all(const float4* x, long long count, float* sink) {
  float total = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = x[i];
    total += (v.x + v.y) + (v.z + v.w);
  }
  if (total < 0.0f) sink[0] = total;  // never (the input is ones): keeps the loads
}
"""


def test_a_cold_sample_of_an_l2_resident_input_is_slower_than_a_hot_one():
    """Issue 32 item 16: the flush is a recorded step of every cold sample, and it works: an
    input that fits in L2 (half its size) reads from L2 when hot and from DRAM when cold.
    Both single launches, so the flush is the only difference."""
    import statistics

    import cupy as cp
    import numpy as np

    from cudabench.backends.base import FLUSH, LAUNCH, SPIN, StepLog
    from cudabench.backends.cupy_backend import CupyBackend

    backend = CupyBackend(0)
    info = backend.device_info()
    x = cp.ones(info.l2_bytes // 2 // 4, dtype=cp.float32)
    sink = cp.zeros(1, dtype=cp.float32)
    kernel = cp.RawKernel(_READ_ALL, "read_all")
    count = np.int64(x.size // 4)

    def call():
        kernel((info.sm_count * 8,), (256,), (x, count, sink))

    def median_us(cold):
        backend.step_log = StepLog()
        sampler = backend.sampler(call, 1, cold)
        for _ in range(3):
            sampler()
        backend.step_log = StepLog()
        times = [sampler() * 1e3 for _ in range(30)]
        return statistics.median(times), backend.step_log.samples

    hot, hot_steps = median_us(False)
    cold, cold_steps = median_us(True)
    assert all(steps == [SPIN, LAUNCH] for steps in hot_steps)
    assert all(steps[0] == FLUSH and steps[-1] == LAUNCH for steps in cold_steps)
    assert cold > 1.3 * hot, f"cold {cold:.2f} us vs hot {hot:.2f} us: the flush did not evict"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_hot_matmul_of_the_telemetry_check_is_right_on_odd_shapes(tmp_path, dtype):
    pytest.importorskip("torch")
    hot_ops = Path(__file__).resolve().parent.parent / "scripts" / "hot_ops"
    out = tmp_path / "hot.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "hgemm",
            "--ops",
            str(hot_ops),
            "-s",
            "257x129x1031",
            "-s",
            "1x1x1",
            "-d",
            dtype,
            "--no-ceilings",
            *QUICK,
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    assert [(r["variant"], r["status"]) for r in rows] == [("torch_mm", "OK")] * 2
