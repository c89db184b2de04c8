"""The use cases (cudabench/usecases/) under both doors: the CI gate, profile, the history's
regression marks, the ceilings and tune's saving are reachable from `cudabench.api` and give
the CLI's answers on the same files and database; and the CLI holds no use-case logic.

The rule `test_the_cli_holds_no_use_case_logic` checks: no module of cudabench/cli/ imports
(at any depth of its code) a module of cudabench.execution (plan, session, executors, sweep, pool,
calibration, ncu), cudabench.tuning (the searches), cudabench.measure, cudabench.profiled, or
the record modules that judge runs or keep state (record.history, record.compare,
record.fingerprint, record.ceilings, record.tuning_file). Those are the use cases' own: a
command reads its text, calls cudabench.usecases, renders with cudabench.present and
cli/render.py, and exits. pyproject.toml's import-linter contract says the same for CI.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import random
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cudabench
from cudabench import api
from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.records import Ceilings, ResultRow, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.record import ceilings as ceilings_file
from cudabench.record import tuning_file
from cudabench.record.history import History
from cudabench.record.results import write_results
from cudabench.usecases.flow import Failed

runner = CliRunner()
PACKAGE = Path(cudabench.__file__).parent
FAKE_NCU = Path(__file__).parent / "fake_ncu.py"
QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
QUICK_CLI = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
USE_CASE_OWNED = (
    "cudabench.execution",
    "cudabench.tuning",
    "cudabench.measure",
    "cudabench.profiled",
    "cudabench.record.history",
    "cudabench.record.compare",
    "cudabench.record.fingerprint",
    "cudabench.record.ceilings",
    "cudabench.record.tuning_file",
)


def meta(started: str, driver: str = FAKE_DEVICE.driver_version, tag: str = "") -> RunMeta:
    return RunMeta(
        device=dataclasses.replace(FAKE_DEVICE, driver_version=driver),
        timing_mode="hot",
        command="cudabench run reduce",
        started=started,
        cudabench_version="0.1.0",
        cupy_version="",
        nvcc_version="",
        git_sha="abc",
        timing=TimingOptions(),
    )


def timed(variant: str, median_us: float, seed: int, baseline: bool = False) -> ResultRow:
    """A row with 30 samples scattered 0.5% around a median."""
    rng = random.Random(seed)
    samples = tuple(median_us * (1 + rng.uniform(-0.005, 0.005)) for _ in range(30))
    ordered = sorted(samples)
    return ResultRow(
        "reduce",
        "16777216",
        "float32",
        variant,
        Status.OK,
        time_us=ordered[15],
        spread=0.008,
        samples=30,
        samples_us=samples,
        is_baseline=baseline,
    )


# ---------------------------------------------------------------- the gate


@pytest.mark.parametrize(
    "b_rows, b_driver, expected",
    [
        ([("float4", 100.2), ("cupy", 130.0)], None, 0),  # SAME: the gate passes
        ([("float4", 110.0), ("cupy", 130.0)], None, 1),  # SLOWER: it fails
        ([("shuffle", 120.0), ("cupy", 130.0)], None, 1),  # float4 missing from B
        ([("float4", 110.0), ("cupy", 130.0)], "999.1", 3),  # another driver: no verdict
    ],
)
def test_the_gate_gives_the_cli_s_verdict_and_exit_status(tmp_path, b_rows, b_driver, expected):
    a = write_results(
        tmp_path / "a",
        meta("2026-11-20T10:00:00+00:00"),
        [timed("float4", 100.0, 1), timed("cupy", 130, 2, True)],
    )[1]
    b_meta = meta("2026-11-21T10:00:00+00:00", driver=b_driver or FAKE_DEVICE.driver_version)
    b = write_results(
        tmp_path / "b", b_meta, [timed(v, t, 10 + i, v == "cupy") for i, (v, t) in enumerate(b_rows)]
    )[1]
    cli = runner.invoke(app, ["compare", str(a), str(b), "--fail-on-regression"])
    found = api.compare(a, b)
    assert found.gate.exit_status == expected == cli.exit_code, cli.output
    assert found.gate.outcome == {0: "pass", 1: "fail", 3: "no verdict"}[expected]
    for label, detail in found.gate.reasons:  # the same reasons, said by the CLI
        assert f"{label}: {detail}" in " ".join(cli.stderr.split())
    counts = ", ".join(f"{n} {v.value}" for v, n in found.counts.items())
    assert counts in cli.stderr
    assert [p.verdict.value for p in found.pairs] == [
        p.verdict.value for p in cudabench.compare(a, b, allow_missing=False).pairs
    ]
    without = runner.invoke(app, ["compare", str(a), str(b)])  # no gate asked: exit 0
    assert without.exit_code == 0


def test_the_gate_against_the_history_is_the_cli_s(tmp_path):
    db = tmp_path / "h.db"
    with History(db) as history:
        for i, (tag, t) in enumerate([("base", 100.0), ("", 100.3), ("", 111.0)]):
            history.import_run(
                meta(f"2026-11-2{i}T10:00:00+00:00"), [timed("float4", t, i)], source=f"p{i}", tag=tag
            )
    cli = runner.invoke(app, ["compare", "--against", "base", "--fail-above", "3%", "--db", str(db)])
    found = api.compare(against="base", threshold=0.03, db=db)
    assert cli.exit_code == found.gate.exit_status == 1
    assert found.gate.reasons[0][0] == "regression" and "float4" in found.gate.reasons[0][1]
    assert f"A: {found.shown_a}" in cli.stderr and "[base]" in found.shown_a


# ---------------------------------------------------------------- history


def _planted(path: Path) -> None:
    """Five runs of float4: steady, steady, 10% slower, back; shuffle steady throughout."""
    times = [100.0, 100.4, 99.8, 110.0, 100.1]
    with History(path) as history:
        for i, t in enumerate(times):
            rows = [timed("float4", t, i), timed("shuffle", 120.0, 10 + i)]
            history.import_run(meta(f"2026-11-2{i}T10:00:00+00:00"), rows, source=f"planted{i}")


def test_history_marks_are_the_cli_s(tmp_path):
    db = tmp_path / "h.db"
    _planted(db)
    cli = runner.invoke(app, ["history", "reduce", "-s", "2^24", "--db", str(db)], env={"COLUMNS": "250"})
    assert cli.exit_code == 0, cli.output
    shown = [ln.split("│")[-2].strip() for ln in cli.stdout.splitlines() if ln.count("│") > 5]
    frame = api.history("reduce", shape="2^24", db=db)
    assert list(frame["verdict"]) == shown
    float4 = frame[frame["variant"] == "float4"]
    assert list(float4["verdict"]) == ["", "SAME", "SAME", "SLOWER", "FASTER"]
    assert list(frame[frame["variant"] == "shuffle"]["verdict"]) == ["", "SAME", "SAME", "SAME", "SAME"]
    assert float4["change"].iloc[3] == pytest.approx(110.0 / 99.8 - 1, abs=0.01)
    unknown = runner.invoke(app, ["history", "reduce", "-v", "flaot4", "--db", str(db)])
    with pytest.raises(cudabench.UsageError) as info:
        api.history("reduce", variant="flaot4", db=db)
    assert unknown.exit_code == 2 and str(info.value) in " ".join(unknown.stderr.split())


# ---------------------------------------------------------------- profile


@pytest.fixture
def ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """tests/fake_ncu.py as `ncu`, the fake backend for the process it profiles."""
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_NCU} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("FAKE_NCU", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]))
    return str(script)


def test_profile_from_the_api_joins_what_the_cli_joins(ncu, tmp_path):
    args = ["reduce", "-s", "64x129", "-v", "float4", "-v", "shuffle", "--ncu", ncu]
    cli = runner.invoke(app, ["profile", *args, "-o", str(tmp_path / "cli")])
    assert cli.exit_code == 0, cli.output
    frame = api.profile(
        "reduce", shapes=(64, 129), variants=["float4", "shuffle"], ncu=ncu, output=tmp_path / "api"
    )
    from cudabench.record.results import read_results

    (cli_file,) = (tmp_path / "cli").glob("*.json")
    _, rows = read_results(cli_file)
    assert list(frame["variant"]) == [r.variant for r in rows] == ["float4", "shuffle", "cupy"]
    assert list(frame["ncu_kernels"]) == [r.ncu.kernels for r in rows if r.ncu] == [1, 1, 2]
    assert list(frame["ncu_bound"]) == [r.ncu.bound for r in rows if r.ncu]
    assert (frame["time_us"] > 0).all() and Path(frame.attrs["ncu_report"]).exists()


def test_ncu_refusing_is_failed_in_the_api_and_exit_1_in_the_cli(ncu, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU", "refuse")
    cli = runner.invoke(app, ["profile", "reduce", "-s", "3x5", "--ncu", ncu, "-o", str(tmp_path / "c")])
    with pytest.raises(Failed) as info:
        api.profile("reduce", shapes="3x5", ncu=ncu, output=tmp_path / "a")
    assert cli.exit_code == 1 and info.value.message in cli.stderr
    assert info.value.details and all(line in cli.stderr for line in info.value.details)


# ---------------------------------------------------------------- ceilings


def test_the_kept_ceilings_are_the_cli_s(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_CEILINGS", str(tmp_path / "ceilings.json"))
    kept = Ceilings(
        gpu=FAKE_DEVICE.name,
        driver=FAKE_DEVICE.driver_version,
        memory_clock_mhz=FAKE_DEVICE.memory_clock_mhz,
        measured="2026-11-23T16:00:00+00:00",
        read_gbps=4000.0,
        write_gbps=4400.0,
        copy_gbps=3600.0,
        triad_gbps=3800.0,
        fma_gflops=50_000.0,
        floor_us=2.0,
    )
    ceilings_file.save(kept, tmp_path / "ceilings.json")
    assert api.ceilings() == kept  # nothing measured: kept for this GPU, driver and clock
    cli = runner.invoke(app, ["ceilings"])
    assert cli.exit_code == 0 and "kept from" in " ".join(cli.stdout.split())
    assert "4,000" in cli.stdout and not list(tmp_path.glob("*_ceilings.json"))


# ---------------------------------------------------------------- tune's saving


def test_tune_saves_from_the_api_as_from_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    narrow = ["-p", "WARP_ROW_BYTES=16,32", "-p", "BLOCK=128,256"]
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "cli.json"))
    cli = runner.invoke(app, ["tune", "reduce", "-v", "float4", "-s", "64x129", *narrow, "--no-plot"])
    assert cli.exit_code == 0, cli.output
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "api.json"))
    frame = api.tune(
        "reduce",
        shapes=[(64, 129)],
        variants="float4",
        params={"WARP_ROW_BYTES": [16, 32], "BLOCK": [128, 256]},
        output=tmp_path / "res",
        **QUICK,
    )
    (from_cli,), (from_api,) = (
        tuning_file.load(tmp_path / "cli.json"),
        tuning_file.load(tmp_path / "api.json"),
    )
    assert from_cli.key == from_api.key == (FAKE_DEVICE.name, "reduce", "float4", "float32", "64x129")
    assert set(from_api.params) == set(from_cli.params) and from_api.params["BLOCK"] in (128, 256)
    assert list(frame["saved"]) == [str(tmp_path / "api.json")]
    assert f"saved to {(tmp_path / 'cli.json').resolve()}" in " ".join(cli.stderr.split())
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "none.json"))
    unsaved = api.tune(
        "reduce", shapes=[(8,)], variants="float4", params={"BLOCK": [128]}, save=False, **QUICK
    )
    assert list(unsaved["saved"]) == [""] and not (tmp_path / "none.json").exists()


# ---------------------------------------------------------------- the CLI is an adapter


def _cudabench_imports(path: Path) -> list[str]:
    """Every cudabench module a file imports, at any depth of its code."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.startswith("cudabench.")]


def _owned(name: str) -> bool:
    return any(name == owned or name.startswith(owned + ".") for owned in USE_CASE_OWNED)


@pytest.mark.parametrize("command", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_cli_holds_no_use_case_logic(command):
    # `from cudabench.usecases.flow import ...` is the way in; the owned modules never are
    imports = _cudabench_imports(command)
    wrong = [name for name in imports if _owned(name)]
    assert not wrong, f"{command.name} imports {wrong}: the use cases (cudabench/usecases/) own them"


def test_the_rule_above_catches_a_command_that_opens_a_session(tmp_path):
    planted = tmp_path / "run_cmd.py"
    planted.write_text("def run():\n    from cudabench.execution.session import Session\n")
    with pytest.raises(AssertionError, match="the use cases"):
        test_the_cli_holds_no_use_case_logic(planted)
    planted.write_text("from cudabench import profiled\n")
    with pytest.raises(AssertionError, match="cudabench.profiled"):
        test_the_cli_holds_no_use_case_logic(planted)


def test_the_api_functions_stay_functions_after_their_subpackages_load():
    import cudabench.execution.plan  # noqa: F401  # the subpackage cudabench/execution/, loaded
    import cudabench.tuning.search  # noqa: F401

    assert cudabench.run is api.run and cudabench.tune is api.tune and cudabench.timeit is api.timeit
    assert {"profile", "ceilings", "compare", "history"} <= set(dir(cudabench))
