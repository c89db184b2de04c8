"""Right verdicts on ops cudabench never saw (issue 41), on the GPU: the corpus in tests/corpus
(twelve ops that cancel or accumulate, no `tolerance()` in any of them) through `cudabench.run`
on the cupy backend: each op's CUDA variants, its Triton variant where it has one, torch's own
ops as library baselines and the planted CUDA faults (`bug_*_cu`), in float32, float16 and
bfloat16, at shapes from one element to rows of 32768 and 2^24 elements.

One sweep runs for the whole module (a config of the twelve ops: one worker, the kernels
compiled ahead by parallel nvcc processes); the tests read its rows:

- zero false FAILs: every correct CUDA and Triton variant and every `torch` baseline is OK, in
  every dtype and shape (`torch_native`, the 16-bit call as a user writes it, at float32);
- every planted CUDA fault FAILs at float32 at the shapes of EXPECTED_FAILS, where the host
  emulation of the same fault (tests/corpus/*/bugs.py) is 3x the tolerance or more under every
  seed, and never crashes elsewhere;
- the fast-math exp (`bug_fast_exp_cu`, __expf: ex2.approx of x * log2 e, what Triton's exp
  and torch.compile's compute) is OK on rows of 32768: the tolerance allows for the rounding of
  x * log2 e (ops/errorbound: EXP_ARG), so it is a planted fault the suite accepts;
- the host emulations (`@variant(host=True)`) are N/A on the GPU, saying why;
- the tolerance is the traced bound on CuPy arrays as on NumPy (no row falls back);
- OK rows carry the accuracy figure err_vs_f32.

Informative, not asserted: each planted fault's verdict in every dtype and shape (a 16-bit
fault within the element type's rounding is an honest OK) and `torch_native` in 16-bit; the
module writes them to verdicts_informative.md beside the results. $CUDABENCH_VERDICTS_OUT
names that folder (scripts/verdicts_gpu.sh); without it, a temporary one.
"""

from __future__ import annotations

import importlib.util
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
NEEDS_CATALOGUE = False  # conftest's ahead-of-time compile of the catalogue: not for this module

CORPUS = Path(__file__).parent / "corpus"
OPS = (
    "layernorm",
    "rmsnorm",
    "prefix_sum",
    "dot",
    "matmul",
    "gelu",
    "silu",
    "row_var",
    "logsumexp",
    "softmax_rows",
    "log_softmax",
    "l2norm",
)
DTYPES = ("float32", "float16", "bfloat16")
ROWS = ("1", "2", "31", "33", "7x33", "64x1000", "256x4096", "2x32768")
SHAPES = {
    **dict.fromkeys(OPS, ROWS),
    "gelu": ("1", "3", "31", "33", "1000", "16777216"),
    "silu": ("1", "3", "31", "33", "1000", "16777216"),
    "matmul": ("1", "3", "31", "7x33", "64x64x1000", "16x16x32768", "256x256x4096"),
}
# the shape whose OK rows must carry err_vs_f32 (the most outputs: a float32 evaluation with
# no rounding error at all, which leaves the figure blank, is out of the question there)
LARGEST = {**dict.fromkeys(OPS, "256x4096"), "gelu": "16777216", "silu": "16777216", "matmul": "256x256x4096"}
TIMING = {"warmup": 1, "min_samples": 1, "min_time_s": 0.0, "max_time_s": 0.02}

# Planted CUDA faults -> {dtype: shapes where the row must FAIL}: the cells where the host
# emulation of the same fault (bugs.py; for the CUDA faults that differ from it - l2norm's tail
# below 32 columns, a drop-last with no guard for one column, silu's hexp - the same arithmetic
# emulated) is 4x the tolerance or more under each of 8 seeds (3 above 2^20 elements). Where a
# cell is missing the fault is within a few times the rounding there, or absent (no K % 32 or
# cols % 32 tail at 4096 and 32768): verdicts_informative.md shows every cell. Within rounding
# at rows of 32768: a variance over n - 1 (1/n = 3e-5 of the variance against a float32 sum of
# 32768 squares) and the last of 32768 exps left out of a sum.
F32_ROWS = ("1", "2", "31", "33", "7x33", "64x1000", "256x4096", "2x32768")
EXPECTED_FAILS: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("layernorm", "bug_var_n1_cu"): {
        "float32": ("2", "31", "33", "7x33", "64x1000", "256x4096"),
        "float16": ("7x33", "64x1000", "256x4096"),
        "bfloat16": ("7x33", "64x1000", "256x4096"),
    },
    ("layernorm", "bug_no_bias_cu"): {
        "float32": F32_ROWS,
        "float16": ("7x33", "64x1000", "2x32768"),
        "bfloat16": ("7x33", "64x1000", "2x32768"),
    },
    ("layernorm", "bug_acc16_cu"): {
        "float16": ("64x1000", "256x4096", "2x32768"),
        "bfloat16": ("64x1000", "256x4096", "2x32768"),
    },
    ("rmsnorm", "bug_tail_cu"): {
        "float32": ("1", "2", "31", "7x33", "64x1000"),
        "float16": ("1", "2", "31", "7x33", "64x1000"),
        "bfloat16": ("1", "2", "31"),
    },
    ("prefix_sum", "bug_exclusive_cu"): {"float32": F32_ROWS, "float16": F32_ROWS, "bfloat16": F32_ROWS},
    ("prefix_sum", "bug_drop_last_cu"): {
        "float32": F32_ROWS,
        "float16": ("1", "7x33", "64x1000", "256x4096"),
        "bfloat16": ("1", "7x33", "64x1000", "256x4096"),
    },
    ("prefix_sum", "bug_acc16_cu"): {
        "float16": ("7x33", "64x1000", "256x4096", "2x32768"),
        "bfloat16": ("7x33", "64x1000", "256x4096", "2x32768"),
    },
    ("dot", "bug_tail_cu"): {
        "float32": ("1", "2", "31", "33", "7x33", "64x1000"),
        "float16": ("1", "2", "31", "7x33", "64x1000"),
        "bfloat16": ("1", "2", "31", "7x33", "64x1000"),
    },
    ("dot", "bug_acc16_cu"): {
        "float16": ("64x1000", "256x4096", "2x32768"),
        "bfloat16": ("64x1000", "256x4096", "2x32768"),
    },
    ("matmul", "bug_k_tail_cu"): {
        "float32": ("1", "3", "31", "7x33", "64x64x1000"),
        "float16": ("1", "3", "31", "7x33", "64x64x1000"),
        "bfloat16": ("1", "3", "31", "7x33", "64x64x1000"),
    },
    ("matmul", "bug_acc16_cu"): {
        "float16": ("64x64x1000", "16x16x32768"),
        "bfloat16": ("64x64x1000", "16x16x32768"),
    },
    ("gelu", "bug_tanh_approx_cu"): {
        "float32": ("3", "31", "33", "1000", "16777216"),
        "float16": ("31", "33", "1000"),
        "bfloat16": ("31", "33", "1000"),
    },
    ("silu", "bug_half_exp_cu"): {"float32": ("3", "31", "33", "1000", "16777216")},
    ("row_var", "bug_n1_cu"): {
        "float32": ("2", "31", "33", "7x33", "64x1000", "256x4096"),
        "float16": ("2", "31", "33", "7x33"),
        "bfloat16": ("2", "31", "33", "7x33"),
    },
    ("logsumexp", "bug_drop_last_cu"): {
        "float32": ("1", "2", "31", "33", "7x33", "64x1000", "256x4096"),
        "float16": ("1", "2", "31", "7x33"),
        "bfloat16": ("1", "2"),
    },
    ("softmax_rows", "bug_drop_last_cu"): {
        "float32": ("1", "2", "31", "33", "7x33", "64x1000", "256x4096"),
        "float16": ("1", "2", "31", "33", "7x33", "64x1000", "256x4096"),
        "bfloat16": ("1", "2", "7x33"),
    },
    ("log_softmax", "bug_drop_last_cu"): {
        "float32": ("1", "2", "31", "33", "7x33", "64x1000", "256x4096"),
        "float16": ("1", "2", "31", "7x33"),
        "bfloat16": ("1", "2"),
    },
    ("l2norm", "bug_tail_cu"): {
        "float32": ("1", "2", "31", "7x33", "64x1000"),
        "float16": ("1", "2", "31", "7x33", "64x1000"),
        "bfloat16": ("1", "2", "31"),
    },
}
# planted faults that are no fault to the tolerance: __expf computes exp2(x * log2 e), the
# product rounded to float32 first, as Triton's exp does; the tolerance allows for it
ACCEPTED = {("softmax_rows", "bug_fast_exp_cu"), ("logsumexp", "bug_fast_exp_cu")}
# planted faults within a few times the rounding at every shape here (1 to 3x the tolerance
# in the host emulation: some cells FAIL, some pass), their verdicts informative only: eps
# outside the square root (eps / 2var of the result, about 84 float32 units, against an
# allowance of the same order), and accumulation in the 16-bit type where the terms are
# like-signed (a sum of squares or of exps: its relative error stays near the element type's
# own rounding of the result, which the 16-bit tolerance allows)
WITHIN_ROUNDING = {
    ("layernorm", "bug_eps_outside_cu"),
    ("rmsnorm", "bug_acc16_cu"),
    ("row_var", "bug_acc16_cu"),
    ("logsumexp", "bug_acc16_cu"),
    ("softmax_rows", "bug_acc16_cu"),
    ("log_softmax", "bug_acc16_cu"),
    ("l2norm", "bug_acc16_cu"),
}
# library baselines whose 16-bit verdict is informative (torch's call on 16-bit tensors)
NATIVE = "torch_native"


def _out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    named = os.environ.get("CUDABENCH_VERDICTS_OUT")
    out = Path(named) if named else tmp_path_factory.mktemp("verdicts_gpu")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _config() -> str:
    lines = ["dtypes: [float32, float16, bfloat16]", "benchmarks:"]
    lines += [f"  - {{op: {op}, shapes: [{', '.join(SHAPES[op])}]}}" for op in OPS]
    return "\n".join(lines) + "\n"


def _variants(op: str) -> list:
    from cudabench.ops import registry
    from cudabench.ops.discovery import discover

    registry.use_ops([CORPUS])
    found, problems = discover(op, [CORPUS])
    assert not problems, problems
    return found


def _compile_ahead() -> None:
    """Every CUDA variant of the corpus in every dtype, by parallel nvcc processes, into the
    compile cache the worker reads (it would compile them one after another)."""
    import cupy

    from cudabench.build.compile import compile_variant
    from cudabench.build.nvcc import CompileError

    arch = f"sm_{cupy.cuda.Device(0).compute_capability}"
    work = [(v, d) for op in OPS for v in _variants(op) if v.kind == "cuda" for d in v.dtypes]

    def build(item):  # type: ignore[no-untyped-def]
        try:
            compile_variant(item[0], arch, item[1])
        except CompileError:
            pass  # the row says so

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(build, work))


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """The sweep's rows (a DataFrame), after writing the informative table."""
    import cudabench

    out = _out_dir(tmp_path_factory)
    config = tmp_path_factory.mktemp("verdicts_config") / "corpus.yaml"
    config.write_text(_config())
    for name in ("verdicts_gpu.json", "verdicts_gpu.csv"):
        (out / name).unlink(missing_ok=True)
    _compile_ahead()
    frame = cudabench.run(
        str(config),
        ops=[CORPUS],
        output=out / "verdicts_gpu.json",
        db=tmp_path_factory.mktemp("verdicts_db") / "history.db",
        ceilings=False,
        tuned=False,
        **TIMING,
    )
    (out / "verdicts_informative.md").write_text(_informative(frame))
    return frame


def _kinds(op: str) -> dict[str, str]:
    """variant -> cuda, triton (a GPU Python variant), host (a NumPy emulation)."""
    from cudabench.ops import pyvariants

    kinds = {}
    for v in _variants(op):
        if v.kind == "cuda":
            kinds[v.name] = "cuda"
        else:
            kinds[v.name] = "host" if pyvariants.load(v)[1].host else "triton"
    return kinds


def _number(value) -> float | None:
    """A float column's value, None where blank (None, NaN, pandas' NA)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _ratio(err, tol) -> float:
    """The worst element's |err| over its tolerance (inf where either is blank)."""
    err, tol = _number(err), _number(tol)
    return err / tol if err is not None and tol else math.inf


def _bad(frame, ok=("OK",)) -> list[str]:
    return [
        f"{r.op} {r.variant} {r.shape} {r.dtype}: {r.status} {r.error}"
        for r in frame.itertuples()
        if r.status not in ok
    ]


def _informative(frame) -> str:
    """Markdown: every planted fault and torch_native row, worst |err| / tolerance per cell."""
    lines = ["# The corpus on the GPU: planted faults and torch's 16-bit calls", ""]
    lines += [
        "Each cell: the verdict and the worst |err| / tolerance (above 1 is a FAIL). A 16-bit",
        "fault within the element type's rounding is an honest OK.",
        "",
    ]
    for op in OPS:
        mine = frame[(frame.op == op) & (frame.variant.str.startswith("bug_") | (frame.variant == NATIVE))]
        mine = mine[mine.status != "N/A"]
        if mine.empty:
            continue
        shapes = [s for s in SHAPES[op] if s in set(mine["shape"])]
        lines += [f"## {op}", "", "| variant | dtype | " + " | ".join(shapes) + " |"]
        lines += ["| --- | --- |" + " --- |" * len(shapes)]
        for (variant, dtype), group in mine.groupby(["variant", "dtype"], sort=True):
            cells = []
            for shape in shapes:
                hit = group[group["shape"] == shape]
                if hit.empty:
                    cells.append("")
                    continue
                row = hit.iloc[0]
                cells.append(f"{row['status']} {_ratio(row['max_abs_err'], row['tolerance']):.3g}")
            lines.append(f"| {variant} | {dtype} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


@pytest.mark.parametrize("op", OPS)
def test_every_case_ran_its_gpu_variants(rows, op):
    """Each (shape, dtype) has a row for every CUDA variant declaring the dtype, the Triton
    variant (OK or FAIL, not N/A, where triton imports) and the torch baselines."""
    kinds = _kinds(op)
    mine = rows[rows.op == op]
    assert set(mine["shape"]) == set(SHAPES[op])
    triton = importlib.util.find_spec("triton") is not None
    declared = {v.name: v.dtypes for v in _variants(op)}
    for (shape, dtype), group in mine.groupby(["shape", "dtype"]):
        names = set(group.variant)
        wanted = {n for n, k in kinds.items() if k == "cuda" and dtype in declared[n]}
        assert wanted <= names, f"{op} {shape} {dtype}: no row for {sorted(wanted - names)}"
        assert "torch" in names, f"{op} {shape} {dtype}: no torch baseline row"
        for name in (n for n, k in kinds.items() if k == "triton"):
            (status,) = group[group.variant == name].status
            assert status != "N/A" or not triton, f"{op} {name} {shape} {dtype}: N/A"


@pytest.mark.parametrize("op", OPS)
def test_zero_false_fails(rows, op):
    """Every correct CUDA and Triton variant and the torch baseline: OK everywhere."""
    kinds = _kinds(op)
    mine = rows[rows.op == op]
    correct = [n for n, k in kinds.items() if k in ("cuda", "triton") and not n.startswith("bug_")]
    checked = mine[mine.variant.isin([*correct, "torch"])]
    checked = checked[checked.status != "N/A"]  # Triton where it does not import
    assert not checked.empty
    assert not _bad(checked), "\n".join(_bad(checked))
    native = mine[(mine.variant == NATIVE) & (mine.dtype == "float32")]
    assert not _bad(native), "\n".join(_bad(native))


@pytest.mark.parametrize("op", OPS)
def test_every_reference_traces_on_cupy(op):
    """The tolerance on the GPU is the traced bound, as on NumPy: the tracer follows each
    reference on CuPy arrays (gelu's calls cupyx.scipy.special.erf), never falling back to
    the |reference|-relative rule, which a row would name in its notes."""
    import cupy

    from cudabench.core.records import Case
    from cudabench.measure.problem import problem
    from cudabench.ops import registry

    registry.use_ops([CORPUS])
    the_op = registry.get_op(op)
    shape = {"gelu": (1000,), "silu": (1000,), "matmul": (8, 8, 100)}.get(op, (7, 33))
    given = problem(cupy, the_op, Case(op=op, shape=shape, dtype="float32"), seed=1)
    assert given.note == "", given.note
    assert "traced" in the_op.tolerance_rule(), the_op.tolerance_rule()
    assert given.yardstick is not None  # the float32 evaluation runs on CuPy too


def test_no_row_fell_back_to_the_relative_rule(rows):
    fell = rows[rows.notes.fillna("").str.contains("could not be traced")]
    assert fell.empty, sorted(set(fell.op + ": " + fell.notes))


@pytest.mark.parametrize("op", OPS)
def test_the_host_emulations_are_n_a_on_the_gpu(rows, op):
    hosts = [n for n, k in _kinds(op).items() if k == "host"]
    mine = rows[(rows.op == op) & rows.variant.isin(hosts)]
    assert not mine.empty
    assert set(mine.status) == {"N/A"}
    assert all("host variant" in e for e in mine.error)


@pytest.mark.parametrize(
    ("op", "fault"), sorted(EXPECTED_FAILS), ids=[f"{o}-{f}" for o, f in sorted(EXPECTED_FAILS)]
)
def test_every_planted_fault_fails_where_it_is_above_rounding(rows, op, fault):
    mine = rows[(rows.op == op) & (rows.variant == fault)]
    missed = []
    for dtype, shapes in EXPECTED_FAILS[(op, fault)].items():
        for shape in shapes:
            (row,) = mine[(mine.dtype == dtype) & (mine["shape"] == shape)].itertuples()
            if row.status != "FAIL" or "outputs wrong" not in row.error:  # a FAIL by the tolerance
                worst = _ratio(row.max_abs_err, row.tolerance)
                missed.append(f"{shape} {dtype}: {row.status} {row.error} (worst {worst:.3g}x the tolerance)")
    assert not missed, f"{op} {fault} was not caught:\n" + "\n".join(missed)


def test_every_planted_fault_has_its_expectation_and_never_crashes(rows):
    planted = {(op, n) for op in OPS for n, k in _kinds(op).items() if k != "host" and n.startswith("bug_")}
    assert planted == set(EXPECTED_FAILS) | ACCEPTED | WITHIN_ROUNDING
    faults = rows[rows.variant.str.startswith("bug_") & rows.variant.str.endswith("_cu")]
    assert not _bad(faults, ok=("OK", "FAIL")), "\n".join(_bad(faults, ok=("OK", "FAIL")))


@pytest.mark.parametrize(("op", "fault"), sorted(ACCEPTED), ids=[f"{o}-{f}" for o, f in sorted(ACCEPTED)])
def test_the_fast_math_exp_is_accepted_on_long_rows(rows, op, fault):
    mine = rows[(rows.op == op) & (rows.variant == fault)]
    assert "2x32768" in set(mine["shape"])
    assert not _bad(mine), "\n".join(_bad(mine))


@pytest.mark.parametrize("op", OPS)
def test_ok_rows_carry_the_accuracy_figure(rows, op):
    mine = rows[(rows.op == op) & (rows["shape"] == LARGEST[op]) & (rows.status == "OK")]
    assert not mine.empty
    figures = {f"{r.variant} {r.dtype}": _number(r.err_vs_f32) for r in mine.itertuples()}
    blank = [name for name, figure in figures.items() if figure is None or figure < 0]
    assert not blank, f"{op} {LARGEST[op]}: no err_vs_f32 for {blank}"
