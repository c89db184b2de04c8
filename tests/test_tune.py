"""Launch-parameter spaces and `cudabench tune` without a GPU: header params and constraints,
the space and its size, --param grids, the search loop through the fake backend (a clock that
depends on the launch), ties, Ctrl-C, the tuning file, and `run` picking a saved
configuration. One test compiles configurations with nvcc to see the definitions arrive."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from conftest import TwoGPUs, fake_session
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE, FakeBackend
from cudabench.cli import app
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Status, row_label, split_label
from cudabench.core.timing import TimingOptions
from cudabench.execution import sweep
from cudabench.execution.plan import apply_tuned, plan
from cudabench.ops.header import KernelHeaderError, parse_header
from cudabench.ops.space import Space, SpaceError, grid, parse_constraint, parse_param_option
from cudabench.record import tuning_file
from cudabench.record.results import read_results
from cudabench.tuning import search, strategies
from cudabench.tuning.outcome import Costs, values_of

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
QUICK_CLI = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
FLOAT4 = BUILTIN_KERNELS / "reduce" / "float4.cu"
HEADER = """\
// cudabench:
//   variant: t
//   entry: reduce_sum_float4
//   block: {block}
//   grid: segments
//   params: {params}
//   constraints: {constraints}
//   about: a tunable test kernel
"""


def header(
    block="BLOCK",
    params="{BLOCK: [256, 128, 512], ITEMS: [64, 16]}",
    constraints='["BLOCK * ITEMS <= 16384"]',
) -> str:
    return HEADER.format(block=block, params=params, constraints=constraints)


def test_header_space_defaults_and_configuration():
    variant = parse_header(Path("t.cu"), "reduce", header())
    assert variant.params == (("BLOCK", (256, 128, 512)), ("ITEMS", (64, 16)))
    assert variant.values == (("BLOCK", 256), ("ITEMS", 64))  # the first values
    assert variant.launches[0].block == 256 and variant.launches[0].block_param == "BLOCK"
    other = variant.configured({"BLOCK": 512})
    assert other.launches[0].block == 512 and other.label == "t[BLOCK=512,ITEMS=64]"
    assert split_label(other.label) == ("t", "BLOCK=512,ITEMS=64")
    assert row_label("t", "") == "t" and split_label("cupy") == ("cupy", "")


@pytest.mark.parametrize(
    "edit, line, message",
    [
        (dict(constraints="[\"__import__('os').system('x') == 0\"]"), 7, "Call is not allowed"),
        (dict(constraints='["BLOK > 1"]'), 7, "did you mean BLOCK"),
        (dict(constraints='["BLOCK / 2 > 1"]'), 7, "write '//'"),
        (dict(constraints='["BLOCK.real > 1"]'), 7, "Attribute is not allowed"),
        (dict(constraints='["BLOCK * ITEMS < 100"]'), 7, "default configuration"),
        (dict(params="{BLOCK: [256, 100]}"), 4, "multiple of 32"),
        (dict(params="{BLOCK: [256, 256]}"), 6, "lists a value twice"),
        (dict(params="{BLOCK: [256, 1.5]}"), 6, "list of integers"),
        (dict(params="{CB_X: [1], BLOCK: [256]}", constraints="[]"), 6, "not starting with CB_"),
        (dict(block="THREADS"), 4, "neither a number nor a parameter"),
    ],
)
def test_header_space_errors_name_the_line(edit, line, message):
    with pytest.raises(KernelHeaderError) as info:
        parse_header(Path("t.cu"), "reduce", header(**edit))
    assert str(info.value).startswith(f"t.cu:{line}:") and message in str(info.value)


def test_constraints_evaluate_only_arithmetic():
    space = Space((("A", (1, 2, 3, 4)), ("B", (1, 2))), ("A * B <= 4", "A % 2 == 0 or B == 1"))
    assert space.full_size == 8
    assert space.valid() == [
        {"A": 1, "B": 1},
        {"A": 2, "B": 1},
        {"A": 2, "B": 2},
        {"A": 3, "B": 1},
        {"A": 4, "B": 1},
    ]
    assert space.violated({"A": 3, "B": 2}) == "A * B <= 4"
    assert Space((("A", (0, 1)),), ("4 // A >= 1",)).valid() == [{"A": 1}]  # 4 // 0: not valid
    with pytest.raises(SpaceError, match="too large"):
        Space((("A", (10,)),), ("A ** 10 ** 10 > 1",)).valid()
    with pytest.raises(SpaceError, match="Call is not allowed"):
        parse_constraint("(lambda: 1)() == 1", ("A",))


def test_param_option_and_grid():
    assert parse_param_option("BLOCK=128,256,0x200") == ("BLOCK", (128, 256, 512))
    for bad in ("BLOCK", "=1", "BLOCK=", "BLOCK=a"):
        with pytest.raises(SpaceError):
            parse_param_option(bad)
    variant = parse_header(FLOAT4, "reduce")
    configs = grid(variant, {"BLOCK": (128, 512), "LOADS": (2, 8)})
    assert [v.launches[0].block for v in configs] == [128, 128, 512, 512]
    assert {dict(v.values)["ITEMS"] for v in configs} == {32}  # the others at their default
    with pytest.raises(SpaceError, match="did you mean LOADS"):
        grid(variant, {"LODS": (2,)})
    with pytest.raises(SpaceError, match="multiple of 32"):
        grid(variant, {"BLOCK": (100,)})


def test_search_space_holds_what_the_shape_ignores():
    variant = parse_header(FLOAT4, "reduce")
    short = strategies.search_space(variant, (442368, 128))
    assert short.held == ("ITEMS", "GRID_K", "LOADS") and short.size == 4 * 3
    long = strategies.search_space(variant, (1 << 24,), {"BLOCK": (256, 512)})
    assert long.held == ("WARP_ROW_BYTES",) and long.size == 2 * 5 * 7 * 3
    assert long.configs[0] == dict(variant.values)  # the default first
    assert long.full_size == 4 * 3 * 5 * 7 * 3
    with pytest.raises(strategies.TuneError, match="no tunable parameters"):
        strategies.search_space(parse_header(BUILTIN_KERNELS / "reduce" / "naive.cu", "reduce"), (8,))


def _clocked_backend(best_block: int) -> FakeBackend:
    """A fake GPU on which a reduce launch takes longer the further its block size is from
    `best_block` (20 us at it), and the library 100 us."""
    backend = FakeBackend()

    def clock(name: str) -> float:
        if name == "baseline":
            return 0.1
        block = backend.last_launch[2]
        return 0.02 * (1 + abs(block - best_block) / 256)

    backend.clock = clock
    return backend


def _sweep(tmp_path: Path, backend: FakeBackend, timing: TimingOptions) -> sweep.Sweep:
    return fake_session(backend).start("tune_reduce", timing, "test", output=tmp_path, record=False)


@pytest.mark.parametrize("strategy", ["exhaustive", "random", "optuna"])
def test_search_finds_the_fastest_configuration(tmp_path, strategy):
    pytest.importorskip("optuna") if strategy == "optuna" else None
    variant = parse_header(FLOAT4, "reduce")
    space = strategies.search_space(variant, (64, 129), {"WARP_ROW_BYTES": (16,)})  # BLOCK only: 4
    timing = TimingOptions(**QUICK)
    backend = _clocked_backend(best_block=512)
    outcome = search.search(
        Case("reduce", (64, 129)),
        space,
        strategies.make_strategy(strategy, space, 10),
        10,
        ("cupy",),
        timing,
        _sweep(tmp_path, backend, timing),
        search_timing=timing,
    )
    assert outcome.measured == 4 and outcome.failed == 0
    assert values_of(outcome.best.label)["BLOCK"] == 512
    assert outcome.default.params.startswith("BLOCK=256")  # the header's default, timed again
    assert outcome.speedup_over_default == pytest.approx(2.0)  # 40 us / 20 us
    assert {r.label for r in outcome.ties} == {outcome.best.label}  # 1024 and 256 are 2x off
    assert [r.variant for r in outcome.final if r.is_baseline] == ["cupy"]
    assert len([r for r in outcome.rows if not r.is_baseline]) == 4  # each configuration once


def test_ties_are_within_the_noise_and_not_ranked(tmp_path):
    variant = parse_header(FLOAT4, "reduce")
    space = strategies.search_space(variant, (64, 129), {"WARP_ROW_BYTES": (16,)})
    timing = TimingOptions(**QUICK)
    backend = FakeBackend()
    backend.clock = lambda name: (
        0.1 if name == "baseline" else 0.02 + 0.0001 * (backend.last_launch[2] == 1024)
    )
    exhaustive = strategies.make_strategy("exhaustive", space, 10)
    outcome = search.search(
        Case("reduce", (64, 129)),
        space,
        exhaustive,
        10,
        ("cupy",),
        timing,
        _sweep(tmp_path, backend, timing),
        search_timing=timing,
    )
    assert len(outcome.ties) == 4  # 0.5% apart: all within the 1% floor


def test_budget_counts_measured_configurations_and_strategies_are_checked():
    variant = parse_header(FLOAT4, "reduce")
    space = strategies.search_space(variant, (1 << 20,))
    assert isinstance(strategies.make_strategy("auto", space, 10_000), strategies.Exhaustive)
    strategy = strategies.make_strategy("random", space, 10, seed=1)
    first = strategy.ask(10)
    assert first[0] == dict(space.variant.values) and len({tuple(c.items()) for c in first}) == 10
    assert strategy.ask(10) != first[:10]
    with pytest.raises(strategies.TuneError, match="did you mean random"):
        strategies.make_strategy("randon", space, 10)


def test_optuna_proposes_only_valid_unmeasured_configurations():
    pytest.importorskip("optuna")
    space = strategies.SearchSpace(
        parse_header(FLOAT4, "reduce"),
        tuple(
            {"BLOCK": b, "WARP_ROW_BYTES": 16, "ITEMS": i, "GRID_K": 0, "LOADS": 4}
            for b in (128, 256, 512, 1024)
            for i in (16, 32, 64, 128, 256)
            if b * i <= 65536
        ),
        1260,
        (),
    )
    strategy = strategies.OptunaSearch(space, seed=0)
    seen = []
    while True:
        batch = strategy.ask(100)
        if not batch:
            break
        for config in batch:
            assert config in space.configs and config not in seen
            seen.append(config)
            strategy.tell(config, abs(config["BLOCK"] - 512) + abs(config["ITEMS"] - 64) + 1.0)
    assert len(seen) == space.size  # it spends the space, then stops


def test_ctrl_c_keeps_every_measured_configuration(tmp_path):
    variant = parse_header(FLOAT4, "reduce")
    space = strategies.search_space(variant, (64, 129), {"WARP_ROW_BYTES": (16,)})
    timing = TimingOptions(**QUICK)
    backend = _clocked_backend(512)
    tuner_sweep = _sweep(tmp_path, backend, timing)
    inner = tuner_sweep.executor.execute
    calls = {"n": 0}

    def interrupt_second_job(jobs, events, ready=None):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        inner(jobs, events, ready)

    tuner_sweep.executor.execute = interrupt_second_job  # type: ignore[method-assign]
    strategy = strategies.Exhaustive(space)
    strategy.queue = strategy.queue[:2]  # round one: two configurations, then the final round
    with pytest.raises(sweep.Interrupted) as info:
        search.search(
            Case("reduce", (64, 129)),
            space,
            strategy,
            10,
            ("cupy",),
            timing,
            tuner_sweep,
            search_timing=timing,
        )
    meta, rows = read_results(info.value.path)
    assert not meta.complete and len(rows) == 2 and all(r.status is Status.OK for r in rows)


def test_tuning_file_round_trip_and_bad_file(tmp_path):
    path = tmp_path / "tuning.json"
    entry = tuning_file.TunedEntry("GPU", "reduce", "float4", "float32", "1024", {"BLOCK": 512}, 20.0)
    tuning_file.save(entry, path)
    tuning_file.save(
        tuning_file.TunedEntry("GPU", "reduce", "float4", "float32", "2048", {"BLOCK": 128}, 30.0), path
    )
    tuning_file.save(entry.__class__(**{**entry.__dict__, "params": {"BLOCK": 1024}}), path)  # replaces
    entries = tuning_file.load(path)
    assert len(entries) == 2
    assert tuning_file.lookup(entries, "GPU", "reduce", "float4", "float32", "1024").params == {"BLOCK": 1024}
    assert tuning_file.lookup(entries, "Other GPU", "reduce", "float4", "float32", "1024") is None
    doc = json.loads(path.read_text())
    doc["entries"][0]["params"] = {"BLOCK": "big"}
    path.write_text(json.dumps(doc))
    with pytest.raises(tuning_file.TuningError, match=r"entries\[0\]\.params\.BLOCK: expected an integer"):
        tuning_file.load(path)


runner = CliRunner()


def cli(*args: str, tuning_file: Path):
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_TUNING": str(tuning_file)}
    return runner.invoke(app, list(args), env=env)


def test_run_uses_the_saved_configuration_unless_told_not_to(tmp_path):
    path = tmp_path / "tuning.json"
    tuning_file.save(
        tuning_file.TunedEntry(
            FAKE_DEVICE.name,
            "reduce",
            "float4",
            "float32",
            "64x129",
            {"BLOCK": 512, "WARP_ROW_BYTES": 32},
            20.0,
        ),
        path,
    )
    result = cli(
        "run",
        "reduce",
        "-s",
        "64x129",
        "-s",
        "1000",
        "-v",
        "float4",
        *QUICK_CLI,
        "-o",
        str(tmp_path / "a"),
        tuning_file=path,
    )
    assert result.exit_code == 0, result.output
    assert "tuned configurations from" in result.stderr
    _, rows = read_results(next((tmp_path / "a").glob("*.json")))
    params = {r.shape: r.params for r in rows if r.variant == "float4"}
    assert params["64x129"].startswith("BLOCK=512,WARP_ROW_BYTES=32,")  # tuned
    assert params["1000"].startswith("BLOCK=256,WARP_ROW_BYTES=16,")  # no entry: defaults
    pinned = cli(
        "run",
        "reduce",
        "-s",
        "64x129",
        "-v",
        "float4",
        "-p",
        "BLOCK=128",
        *QUICK_CLI,
        "-o",
        str(tmp_path / "b"),
        tuning_file=path,
    )
    assert pinned.exit_code == 0, pinned.output
    _, rows = read_results(next((tmp_path / "b").glob("*.json")))
    assert rows[0].params.startswith("BLOCK=128,WARP_ROW_BYTES=32,")  # --param wins, rest tuned
    plain = cli(
        "run",
        "reduce",
        "-s",
        "64x129",
        "-v",
        "float4",
        "--no-tuned",
        *QUICK_CLI,
        "-o",
        str(tmp_path / "c"),
        tuning_file=path,
    )
    _, rows = read_results(next((tmp_path / "c").glob("*.json")))
    assert rows[0].params.startswith("BLOCK=256,WARP_ROW_BYTES=16,")
    assert "tuned configurations" not in plain.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "reduce", "-s", "8", "-p", "BLOCK"], "write NAME=V1,V2"),
        (["run", "reduce", "-s", "8", "-v", "naive", "-p", "BLOCK=128"], "no chosen variant declares it"),
        (["run", "reduce", "-s", "8", "-v", "float4", "-p", "BLOCK=100"], "multiple of 32"),
        (["tune", "reduce", "-s", "8", "-v", "naive"], "no tunable parameters"),
        (["tune", "reduce", "-s", "8", "-v", "float4", "--strategy", "best"], "--strategy 'best'"),
        (["tune", "reduce", "-s", "8", "-v", "float4", "-p", "BLOK=1"], "did you mean BLOCK"),
        (["tune", "reduce", "-s", "8", "-v", "float4", "-p", "BLOCK=100"], "multiple of 32"),
    ],
)
def test_bad_param_input_is_one_line_and_exit_2(tmp_path, args, message):
    result = cli(*args, tuning_file=tmp_path / "t.json")
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_tune_space_needs_no_gpu(tmp_path):
    result = runner.invoke(
        app, ["tune", "reduce", "-v", "float4", "-s", "2^24", "--space"], env={"CUDABENCH_BACKEND": "nosuch"}
    )
    assert result.exit_code == 0, result.output
    assert "1260" in result.stdout and "WARP_ROW_BYTES" in result.stdout


def test_tune_end_to_end_saves_plots_and_keeps_every_configuration(tmp_path):
    path = tmp_path / "tuning.json"
    out = tmp_path / "res"
    result = cli(
        "tune",
        "reduce",
        "-v",
        "float4",
        "-s",
        "64x129",
        "-p",
        "WARP_ROW_BYTES=16",
        "-o",
        str(out),
        tuning_file=path,
    )
    assert result.exit_code == 0, result.output
    assert "exhaustive: 4 configurations measured" in result.stderr
    costs = next(x for x in result.stderr.splitlines() if x.startswith("where the time went"))
    assert "4 configurations in" in costs and "set-up" in costs and "host" in costs and "nvcc" not in costs
    (entry,) = tuning_file.load(path)
    assert (entry.gpu, entry.op, entry.variant, entry.shape) == (
        FAKE_DEVICE.name,
        "reduce",
        "float4",
        "64x129",
    )
    assert list(out.glob("*.png"))
    meta, rows = read_results(next(out.glob("*.json")))
    assert meta.complete and len([r for r in rows if not r.is_baseline]) == 4


def test_a_narrowed_search_plots_only_what_it_searched(tmp_path):
    """Seed 001's sweep: GRID_K varies, the rest pinned off their defaults. The header's
    default (ITEMS=32, GRID_K=0) is timed in the final round but is not a point of the
    sweep, so the figure is time against GRID_K, not a heat map with an ITEMS axis."""
    out = tmp_path / "res"
    result = cli(
        "tune",
        "reduce",
        "-v",
        "float4",
        "-s",
        "2^16",
        "-p",
        "GRID_K=1,2,4",
        "-p",
        "BLOCK=256",
        "-p",
        "ITEMS=16",
        "-p",
        "LOADS=4",
        "--no-save",
        "-o",
        str(out),
        tuning_file=tmp_path / "tuning.json",
    )
    assert result.exit_code == 0, result.output
    assert "exhaustive: 3 configurations measured" in result.stderr
    assert "plot (time against GRID_K)" in result.stderr
    _, rows = read_results(next(out.glob("*.json")))
    assert any("ITEMS=32" in r.params for r in rows if not r.is_baseline)  # the default: timed


@pytest.mark.nvcc
def test_definitions_reach_nvcc(tmp_path, monkeypatch):
    """Each configuration is its own cubin, compiled with its -D definitions."""
    from cudabench.build.compile import compile_variant

    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "smem.cu"
    source.write_text(
        textwrap.dedent("""\
        // cudabench:
        //   variant: smem
        //   entry: k
        //   block: BLOCK
        //   grid: segments
        //   params: {BLOCK: [128, 256], TILE: [8, 16]}
        //   about: static shared memory sized by a parameter
        extern "C" __global__ void __launch_bounds__(BLOCK) k(float* out) {
          __shared__ float tile[TILE * 32];
          tile[threadIdx.x % (TILE * 32)] = threadIdx.x;
          __syncthreads();
          out[threadIdx.x] = tile[(threadIdx.x + 1) % (TILE * 32)];
        }
        """)
    )
    variant = parse_header(source, "reduce")
    small = compile_variant(variant, "sm_80")
    large = compile_variant(variant.configured({"TILE": 16}), "sm_80")
    assert small.launch_resources[0].shared_bytes == 8 * 32 * 4
    assert large.launch_resources[0].shared_bytes == 16 * 32 * 4
    assert small.cubin != large.cubin


@pytest.mark.nvcc
@pytest.mark.time_limit(1200)  # nvcc at every space's extremes: 302 s on a loaded 2-core host
def test_every_builtin_space_compiles_at_its_extremes(tmp_path, monkeypatch):
    """Each built-in variant with params compiles (every dtype, sm_90) at its smallest and at
    its largest valid configuration: the kernels' static_asserts and the launch bounds accept
    what the constraints let through."""
    import concurrent.futures

    from cudabench.build.compile import compile_variant
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import all_ops

    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    jobs = []
    for op in all_ops():
        for variant in discover(op, [BUILTIN_KERNELS])[0]:
            if not variant.params:
                continue
            # the valid configurations with the smallest and the largest values: every
            # parameter at its extremes where the constraints allow them together
            valid = Space(variant.params, variant.constraints).valid()
            for pick in (min, max):
                chosen = pick(valid, key=lambda c: tuple(sorted(c.values())))
                config = variant.configured(chosen)
                jobs += [(config, dtype) for dtype in variant.dtypes]
    assert len({(j[0].op, j[0].name) for j in jobs}) >= 6
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        compiled = list(pool.map(lambda job: compile_variant(job[0], "sm_90", job[1]), jobs))
    assert all(c.cubin.exists() for c in compiled)


def test_sgemm_block_tile_parameters_reach_the_grid_rule():
    from cudabench.core.records import Launch
    from cudabench.ops.registry import get_op

    variant = parse_header(BUILTIN_KERNELS / "sgemm" / "warptile.cu", "sgemm")
    op = get_op("sgemm")
    default = op.geometry(variant.launches[0], variant, (1000, 300, 70), FAKE_DEVICE, 1)
    assert default.grid == (3, 4) and default.block == 256  # ceil(300 / BN 128), ceil(1000 / BM 256)
    wide = variant.configured({"BM": 64, "BN": 256, "WM": 32, "WN": 128, "BLOCK": 128})
    geometry = op.geometry(wide.launches[0], wide, (1000, 300, 70), FAKE_DEVICE, 1)
    assert geometry.grid == (2, 16) and geometry.block == 128
    bare = Launch(entry="k", block=256, grid="blocktile")
    with pytest.raises(ValueError, match="needs parameters BM and BN"):
        op.geometry(
            bare,
            parse_header(BUILTIN_KERNELS / "sgemm" / "tile128.cu", "sgemm"),
            (64, 64, 64),
            FAKE_DEVICE,
            1,
        )


def test_transpose_tile_parameters_reach_the_grid_rule():
    from cudabench.ops.registry import get_op

    variant = parse_header(BUILTIN_KERNELS / "transpose" / "smem64.cu", "transpose")
    op = get_op("transpose")
    default = op.geometry(variant.launches[0], variant, (100, 200), FAKE_DEVICE, 4)
    assert default.grid == (4, 2) and default.block == (32, 8)
    small = variant.configured({"TILE": 32, "BLOCK": 128})
    geometry = op.geometry(small.launches[0], small, (100, 200), FAKE_DEVICE, 4)
    assert geometry.grid == (7, 4) and geometry.block == (32, 4)
    assert strategies.search_space(variant, (8192, 8192)).size == 8  # 2 tiles x 4 blocks, all valid


def test_a_tuned_configuration_the_header_no_longer_allows_is_not_used(tmp_path):
    folder = tmp_path / "k" / "reduce"
    folder.mkdir(parents=True)
    (folder / "t.cu").write_text(header(constraints='["BLOCK * ITEMS <= 16384"]') + "\n")
    path = tmp_path / "tuning.json"
    tuning_file.save(
        tuning_file.TunedEntry(
            FAKE_DEVICE.name, "reduce", "t", "float32", "7", {"BLOCK": 512, "ITEMS": 64}, 20.0
        ),
        path,
    )  # 32768: now too many
    work = plan("reduce", [(7,)], ["t"], [tmp_path / "k"], **QUICK)
    tuned = apply_tuned(work, FAKE_DEVICE.name, path)
    assert tuned.jobs[0].variants[0].params_text == "BLOCK=256,ITEMS=64"
    assert any("not used" in n and "BLOCK * ITEMS <= 16384" in n for n in tuned.notes)


# ---------------------------------------------------------------- where a search's time goes (issue 43)


def test_configurations_of_one_case_share_inputs_and_reference(monkeypatch):
    """Every configuration of a variant at one case draws the same inputs (the seed is the
    variant's name's): the float64 reference is made once, not once a configuration; a
    baseline (its own seed) or another case makes its own."""
    from cudabench.measure import prepare
    from cudabench.measure.runner import CaseJob, Runner

    made = []
    real = prepare.problem
    monkeypatch.setattr(prepare, "problem", lambda *a, **k: made.append(a[2]) or real(*a, **k))
    variant = parse_header(FLOAT4, "reduce")
    configs = tuple(variant.configured({"BLOCK": b, "WARP_ROW_BYTES": 16}) for b in (128, 256, 512, 1024))
    runner = Runner(FakeBackend())
    rows = runner.run_job(CaseJob(Case("reduce", (64, 129)), configs[:2], (), TimingOptions(**QUICK)))
    rows += runner.run_job(CaseJob(Case("reduce", (64, 129)), configs[2:], ("cupy",), TimingOptions(**QUICK)))
    assert [r.status for r in rows] == [Status.OK] * 5
    assert len(made) == 2  # the variant's problem once over two jobs, the baseline's once
    runner.run_job(CaseJob(Case("reduce", (64, 130)), configs[:1], (), TimingOptions(**QUICK)))
    assert len(made) == 3
    # interleaved: every call is prepared before any is timed, so none shares its inputs
    interleaved = TimingOptions(**{**QUICK, "interleave": True})
    rows += runner.run_job(CaseJob(Case("reduce", (64, 129)), configs[:2], (), interleaved))
    assert len(made) == 5 and [r.status for r in rows[-2:]] == [Status.OK, Status.OK]
    assert all(
        r.setup_s is not None and r.setup_s > 0 and r.measure_s is not None and r.measure_s > 0 for r in rows
    )


def test_a_fail_on_kept_inputs_is_checked_again_on_fresh_ones(monkeypatch):
    """A kernel that wrote to its inputs (a bug the check does not see) cannot make the next
    configuration FAIL: a FAIL on a kept problem is checked again on a fresh one; a variant
    wrong on its own still FAILs."""
    from cudabench.measure.runner import CaseJob, Runner

    variant = parse_header(FLOAT4, "reduce")
    one, two = (variant.configured({"BLOCK": b, "WARP_ROW_BYTES": 16}) for b in (128, 256))
    runner = Runner(FakeBackend())
    case = Case("reduce", (64, 129))
    (first,) = runner.run_job(CaseJob(case, (one,), (), TimingOptions(**QUICK)))
    kept = runner.preparer._kept[1]
    kept.inputs[0][...] = 7.0  # what a kernel writing to its input would leave
    (second,) = runner.run_job(CaseJob(case, (two,), (), TimingOptions(**QUICK)))
    assert first.status is Status.OK and second.status is Status.OK and not runner.preparer.reused
    assert runner.preparer._kept[1] is not kept  # the fresh one is kept now


def test_costs_say_the_host_share():
    costs = Costs(
        rounds_s=10.0,
        final_s=2.0,
        setup_s=8.0,
        measure_s=4.0,
        compile_s=30.0,
        waited_s=0.5,
        strategy_s=0.5,
        configurations=100,
        workers=2,
        final_setup_s=1.5,
        final_measure_s=0.4,
        final_slowest=("torch", 1.2),
        compiled=40,
    )
    assert costs.host_s == pytest.approx(3.0)  # 10 - (8 + 4) / 2 - 0.5 - 0.5
    assert costs.per_configuration_ms() == pytest.approx((100.0, 80.0, 40.0, 30.0))
    from cudabench.cli.tune_cmd import costs_line

    line = costs_line(costs)
    assert "100 ms each: set-up 80 ms" in line and "host 30 ms" in line and "(2 workers at a time)" in line
    assert "nvcc 40 configurations, 30.0 s ahead of the GPU, 0.5 s waited for" in line
    cached = costs_line(dataclasses.replace(costs, compiled=0, compile_s=0.0))
    assert "every configuration in the compile cache; strategy" in cached and "nvcc" not in cached
    final = "final interleaved round 2.00 s (on one GPU: set-up 1.5 s, the longest torch 1.2 s; timing 0.4 s"
    assert final in line
    assert "(on one GPU" not in costs_line(dataclasses.replace(costs, final_slowest=None))


def test_costs_say_each_workers_first_configuration_apart_from_the_rest():
    """A process's first configuration pays its inputs, reference and CuPy's first kernels
    once (0.1 s on an H200, the rest 1 to 2 ms): the line says it apart, and the set-up a
    configuration is that of the others."""
    from cudabench.cli.tune_cmd import costs_line

    costs = Costs(2.0, 0.5, 1.5, 1.0, None, 0.0, 0.0, 200, 2, first_setup_s=1.1, first_workers=2)
    assert costs.per_configuration_ms()[1] == pytest.approx(1e3 * 0.4 / 198)  # 2.0 ms
    line = costs_line(costs)
    assert (
        "set-up 2 ms (module load, inputs, float64 reference, check; each worker's first took 0.55 s" in line
    )


def test_costs_say_which_baselines_were_timed_apart_and_the_wait_for_their_library():
    from cudabench.cli.tune_cmd import costs_line

    costs = Costs(10.0, 0.5, 8.0, 4.0, None, 0.0, 0.0, 100, 1, 0.1, 0.3, ("cupy", 0.02))
    apart = dataclasses.replace(costs, library_wait_s=1.3, apart=("torch",), apart_s=1.6)
    line = costs_line(apart)
    assert "final interleaved round 0.50 s (set-up 0.1 s" in line  # no wait in the final round
    assert line.endswith("; then torch apart 1.6 s (1.3 s waiting for the worker importing its libraries)")
    bare = costs_line(dataclasses.replace(apart, final_slowest=None))  # no final round's split
    assert bare.endswith("; then torch apart 1.6 s (1.3 s waiting for the worker importing its libraries)")
    kept = costs_line(dataclasses.replace(costs, library_wait_s=1.3))  # torch in the final round
    assert (
        "(1.3 s waiting for the worker importing its libraries, set-up 0.1 s" in kept and "apart" not in kept
    )


def test_a_baseline_timed_apart_divides_by_itself_when_the_first_one_failed(monkeypatch):
    """No time from the final round's first baseline (CuPy's FAILed): the row timed apart
    has nothing else to divide by, and the sweep falls back to its own first baseline."""
    from cudabench.measure.runner import CaseJob

    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("slowlib",) if "slow" in self.baselines else ())
    variant = parse_header(FLOAT4, "reduce")
    chosen = (variant.configured({"BLOCK": 256, "WARP_ROW_BYTES": 16}),)
    noted = _NotingSweep(_Successors({"slowlib"}), baseline_us=None)
    search.final_round(
        Case("reduce", (64, 129)),
        chosen,
        ("cupy", "slow"),
        TimingOptions(**QUICK),
        noted,
        search._Compiles(None, 1),
    )
    assert [j.baselines for j in noted.jobs] == [("cupy",), ("slow",)] and noted.jobs[1].divide_by_us is None


class _Successors:
    """What final_round asks of the pool: the libraries still importing, and a wait for them;
    and a sweep that notes the jobs it is given and answers a row for each variant and
    baseline."""

    def __init__(self, coming):
        self.coming_now, self.waits = set(coming), []

    def coming(self):
        return tuple(self.coming_now)

    def await_successors(self, libraries):
        self.waits.append(tuple(libraries))
        waited = 1.25 if self.coming_now else 0.0  # the pool's: none once a worker has them
        self.coming_now.clear()
        return waited


class _NotingSweep:
    def __init__(self, executor, baseline_us=10.0):
        self.executor, self.jobs, self.baseline_us = executor, [], baseline_us

    def run(self, jobs, ready=None, whole=False):
        from cudabench.core.records import ResultRow

        self.jobs += jobs
        return [
            [ResultRow.of(j.case, v.label, Status.OK) for v in j.variants]
            + [
                ResultRow.of(j.case, b, Status.OK, is_baseline=True, time_us=self.baseline_us)
                for b in j.baselines
            ]
            for j in jobs
        ]


@pytest.mark.parametrize(
    ("coming", "baselines", "rounds"),
    [
        ({"slowlib"}, ("cupy", "slow"), [("cupy",), ("slow",)]),  # importing: slow apart, after
        (set(), ("cupy", "slow"), [("cupy", "slow")]),  # imported already: one round
        ({"slowlib"}, ("slow",), [("slow",)]),  # the only baseline: stays (vs library divides by it)
        ({"slowlib"}, ("slow", "cupy"), [("slow", "cupy")]),  # the first: stays, whatever is importing
    ],
)
def test_the_final_round_times_a_baseline_apart_while_its_library_is_importing(
    monkeypatch, coming, baselines, rounds
):
    """Issue 43: the finalists' ranking waits for no library import; a baseline whose
    library a successor is still importing is timed after it, in a job of its own, once a
    worker has it, unless it is the only baseline (the `vs library` column divides by the
    first baseline, timed with the finalists)."""
    from cudabench.measure.runner import CaseJob

    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("slowlib",) if "slow" in self.baselines else ())
    variant = parse_header(FLOAT4, "reduce")
    chosen = tuple(variant.configured({"BLOCK": b, "WARP_ROW_BYTES": 16}) for b in (128, 256))
    pool = _Successors(coming)
    noted = _NotingSweep(pool)
    compiles = search._Compiles(None, 1)
    final, apart = search.final_round(
        Case("reduce", (64, 129)), chosen, baselines, TimingOptions(**QUICK), noted, compiles
    )
    assert [j.baselines for j in noted.jobs] == rounds
    assert [len(j.variants) for j in noted.jobs] == [2] + [0] * (len(rounds) - 1)  # finalists once
    assert all(j.timing.interleave and j.timing.precision == search.FINAL_PRECISION for j in noted.jobs)
    assert [r.label for r in final.rows][:2] == [v.label for v in chosen]
    if len(rounds) == 2:
        assert [r.label for r in apart.rows] == ["slow"] and apart.library_wait_s == 1.25
        assert noted.jobs[1].divide_by_us == 10.0  # vs library: CuPy's time, from the final round
        assert final.library_wait_s == 0.0 and pool.waits == [("slowlib",)]
    else:
        assert apart.rows == [] and final.library_wait_s == (1.25 if "slow" in baselines and coming else 0)


def test_only_the_configurations_the_cache_lacks_go_to_nvcc():
    """A round's configurations are looked up in the compile cache once, here; only those it
    lacks go to nvcc's threads, and a round of cached ones starts none."""
    from cudabench.measure.runner import CaseJob

    variant = parse_header(FLOAT4, "reduce")
    configs = [variant.configured({"BLOCK": b, "WARP_ROW_BYTES": 16}) for b in (128, 256, 512, 1024)]
    compiled: list[str] = []
    lacking = {configs[1].label, configs[3].label}
    compiles = search._Compiles(
        lambda v: compiled.append(v.label), 4, lambda vs: [v for v in vs if v.label in lacking]
    )
    case = Case("reduce", (64, 129))
    timing = TimingOptions(**QUICK)
    compiles.submit(
        [CaseJob(case, tuple(configs[:2]), (), timing), CaseJob(case, tuple(configs[2:]), (), timing)]
    )
    compiles.ready(0)
    compiles.ready(1)
    assert sorted(compiled) == sorted(lacking) and compiles.submitted == 2
    lacking.clear()
    compiles.submit([CaseJob(case, tuple(configs), (), timing)])
    compiles.ready(0)
    assert compiles.submitted == 2 and [len(futures) for futures in compiles.jobs] == [0]
    compiles.close()
    idle = search._Compiles(lambda v: None, 4, lambda vs: [])
    idle.submit([CaseJob(case, tuple(configs), (), timing)])
    assert idle.pool is None and idle.compiling


def test_a_search_on_several_gpus_sends_its_rounds_in_jobs_a_gpu(tmp_path, monkeypatch):
    """Issue 43: a round goes out in JOBS_A_ROUND jobs a GPU, whole (not a part a
    configuration, which cost the parent a round trip each: 7 ms on two H200s, slower than
    one GPU), and the final round stays whole (interleaved) too."""
    monkeypatch.setattr(search, "CHUNK", 1)
    monkeypatch.setattr(search, "JOBS_A_ROUND", 1)
    variant = parse_header(FLOAT4, "reduce")
    space = strategies.search_space(variant, (64, 129), {"WARP_ROW_BYTES": (16,)})
    timing = TimingOptions(**QUICK)
    sweep_ = _sweep(tmp_path, _clocked_backend(best_block=512), timing)
    sweep_.executor = TwoGPUs(sweep_.executor)
    outcome = search.search(
        Case("reduce", (64, 129)),
        space,
        strategies.make_strategy("exhaustive", space, 10),
        10,
        ("cupy",),
        timing,
        sweep_,
        search_timing=timing,
    )
    assert outcome.measured == 4 and values_of(outcome.best.label)["BLOCK"] == 512
    costs = outcome.costs
    assert costs.first_workers == 2 and 0 < costs.first_setup_s <= costs.setup_s  # one a GPU
    *rounds, final = sweep_.executor.parts
    assert [len(names) for _, names, baselines in rounds] == [2, 2]  # 4 configurations, 2 GPUs
    assert final[2] == ["cupy"] and len(final[1]) > 1
