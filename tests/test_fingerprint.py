"""The fingerprint gate without a GPU: what a run's fingerprint holds, which differences count,
and compare and history giving NOT COMPARABLE (with the keys) instead of a verdict between
runs of different machines or methods, unless --allow-mismatch (then the verdicts are
marked); old files and databases without the new fields still compare."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
from pathlib import Path

import pytest
from conftest import flat
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.record.compare import Verdict, compare_rows, run_differences
from cudabench.record.fingerprint import (
    ALL,
    KEYS,
    blocking,
    describe,
    differences,
    fingerprint,
    loads,
    short_line,
)
from cudabench.record.history import History
from cudabench.record.history_schema import _MIGRATIONS, SCHEMA_VERSION
from cudabench.record.results import meta_dict, read_results, row_record, write_results

runner = CliRunner()
WIDE = {"COLUMNS": "250"}
DEVICE = dataclasses.replace(
    FAKE_DEVICE,
    name="NVIDIA H100 80GB HBM3",
    driver_version="580.95",
    runtime_version="13.0",
    power_limit_w="700",
    ecc="on",
    mig="off",
)
META = RunMeta(
    device=DEVICE,
    timing_mode="cold",
    command="cudabench run reduce",
    started="2026-11-24T10:00:00+00:00",
    cudabench_version="0.1.0",
    cupy_version="14.2.0",
    nvcc_version="13.0.88",
    git_sha="abc",
    timing=TimingOptions(cold=True),
    compile_flags="-O3 -std=c++17 -lineinfo",
)


def other(meta: RunMeta = META, started: str = "2026-11-25T10:00:00+00:00", **device: str) -> RunMeta:
    """`meta` on a card whose DeviceInfo differs in `device`, started later."""
    return dataclasses.replace(meta, started=started, device=dataclasses.replace(meta.device, **device))


def timed(variant: str, median_us: float, seed: int, baseline: bool = False) -> ResultRow:
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
        min_us=ordered[0],
        spread=0.008,
        samples=30,
        samples_us=samples,
        is_baseline=baseline,
    )


A_ROWS = [timed("float4", 50.0, 1), timed("shuffle", 60.0, 2), timed("cupy", 100.0, 3, True)]
B_ROWS = [timed("float4", 50.1, 4), timed("shuffle", 70.0, 5), timed("cupy", 100.2, 6, True)]


# ---------------------------------------------------------------- the fingerprint itself


def test_the_fingerprint_holds_every_key_that_moves_times():
    fp = fingerprint(META)
    assert tuple(fp) == KEYS
    assert fp == {
        "gpu": "NVIDIA H100 80GB HBM3",
        "driver": "580.95",
        "cuda": "13.0",
        "nvcc": "13.0.88",
        "power_limit_w": "700",
        "ecc": "on",
        "mig": "off",
        "clocks": "default",
        "fill": "random",
        "timer": "events",
        "flush": "cold",
        "compile_flags": "-O3 -std=c++17 -lineinfo",
        "cudabench": "0.1.0",
    }
    both = dataclasses.replace(META, timing=dataclasses.replace(META.timing, timer="both"))
    assert fingerprint(both)["timer"] == "cupti"  # a both run's times are CUPTI's
    assert "driver 580.95" in short_line(fp) and "ecc on" in short_line(fp)


@pytest.mark.parametrize(
    "change, key",
    [
        (dict(driver_version="575.57"), "driver"),
        (dict(power_limit_w="500"), "power_limit_w"),
        (dict(ecc="off"), "ecc"),
        (dict(mig="on"), "mig"),
        (dict(runtime_version="12.8"), "cuda"),
        (dict(name="NVIDIA H200"), "gpu"),
    ],
)
def test_each_device_key_is_a_difference(change, key):
    b = other(**change)
    assert run_differences(META, b) == [(key, fingerprint(META)[key], fingerprint(b)[key])]


@pytest.mark.parametrize(
    "timing, key",
    [
        (dict(clocks="base"), "clocks"),
        (dict(fill="zeros"), "fill"),
        (dict(timer="cupti"), "timer"),
    ],
)
def test_each_timing_key_is_a_difference(timing, key):
    b = dataclasses.replace(META, timing=dataclasses.replace(META.timing, **timing))
    assert [d[0] for d in run_differences(META, b)] == [key]


@pytest.mark.parametrize(
    "field, value, key",
    [
        ("nvcc_version", "12.9.86", "nvcc"),
        ("compile_flags", "-O2", "compile_flags"),
        ("cudabench_version", "0.2.0", "cudabench"),
        ("timing_mode", "hot", "flush"),
    ],
)
def test_each_run_key_is_a_difference(field, value, key):
    b = dataclasses.replace(META, **{field: value})
    assert run_differences(META, b) == [(key, fingerprint(META)[key], value)]


def test_unknown_values_and_keys_are_no_difference():
    a, b = fingerprint(META), fingerprint(other(power_limit_w="", ecc=""))
    assert differences(a, b) == []  # '' is unknown, on either side
    older = {k: v for k, v in a.items() if k not in ("compile_flags", "mig")}
    assert differences(older, {**a, "mig": "on"}) == []  # a key one side lacks: unknown
    assert differences(a, {**a, "power_limit_w": "700.0"}) == []  # the same number
    assert differences({}, a) == [] and loads("") == {} and loads("not json") == {}
    assert differences({**a, "new_key": "x"}, {**a, "new_key": "y"}) == [("new_key", "x", "y")]


def test_allowing_keys():
    diffs = [("driver", "580.95", "575.57"), ("timer", "events", "cupti")]
    assert blocking(diffs, ()) == diffs and blocking(diffs, {ALL}) == []
    assert blocking(diffs, {"timer"}) == [("driver", "580.95", "575.57")]
    assert describe(diffs) == "driver 580.95 != 575.57, timer events != cupti"


def test_identical_fingerprints_give_verdicts_as_before():
    pairs = {p.key.variant: p for p in compare_rows(A_ROWS, B_ROWS, mismatch=run_differences(META, META))}
    assert pairs["shuffle"].verdict is Verdict.SLOWER and pairs["shuffle"].regressed
    assert pairs["float4"].verdict is Verdict.SAME
    assert not any(p.marked or p.mismatch for p in pairs.values())


# ---------------------------------------------------------------- compare


@pytest.fixture
def driver_changed(tmp_path: Path) -> list[str]:
    """Run A on driver 580.95 at 700 W, run B (shuffle 17% slower) on 575.57 at 500 W."""
    write_results(tmp_path / "a", META, A_ROWS)
    write_results(tmp_path / "b", other(driver_version="575.57", power_limit_w="500"), B_ROWS)
    return ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]


def test_another_driver_is_not_comparable_and_named(driver_changed):
    shown = runner.invoke(app, driver_changed, env=WIDE)
    assert shown.exit_code == 0, shown.output
    reason = "driver 580.95 != 575.57, power_limit_w 700 != 500"
    assert shown.stdout.count(f"NOT COMPARABLE: {reason}") == 3  # each row, in one line
    assert "SLOWER" not in shown.stdout and "SAME" not in shown.stdout
    assert f"fingerprints differ: {reason}" in shown.stdout
    assert "3 NOT_COMPARABLE" in shown.stderr and "--allow-mismatch" in shown.stderr
    js = json.loads(runner.invoke(app, [*driver_changed, "--json"]).stdout)
    assert {p["verdict"] for p in js} == {"NOT_COMPARABLE"}
    assert js[0]["mismatch"] == [
        {"key": "driver", "a": "580.95", "b": "575.57"},
        {"key": "power_limit_w", "a": "700", "b": "500"},
    ]


def test_the_gate_neither_fails_nor_passes_silently_on_a_changed_machine(driver_changed):
    """shuffle is 17% slower in B, but on another driver and power limit: the gate does not
    fail on it, and says that it judged nothing."""
    gate = runner.invoke(app, [*driver_changed, "--fail-above", "3%"])
    assert gate.exit_code == 3, gate.output  # no verdict: neither 0 (pass) nor 1 (fail)
    said = flat(gate.stderr)
    assert "gate: no kernel row was judged: all 2 are NOT COMPARABLE" in said
    assert "no verdict (exit 3)" in said and "regression:" not in said


def test_allow_mismatch_gives_marked_verdicts_and_gates_on_them(driver_changed):
    shown = runner.invoke(app, [*driver_changed, "--allow-mismatch"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert "SLOWER*" in shown.stdout and "SAME*" in shown.stdout
    assert "NOT COMPARABLE" not in shown.stdout
    assert (
        "*: 3 verdict(s) given although the runs differ: driver 580.95 != 575.57, power_limit_w 700 != 500"
    ) in flat(shown.stderr)
    js = json.loads(runner.invoke(app, [*driver_changed, "--allow-mismatch", "--json"]).stdout)
    assert {p["variant"]: p["verdict"] for p in js} == {"shuffle": "SLOWER", "float4": "SAME", "cupy": "SAME"}
    assert all(p["mismatch"] for p in js)  # what the mark stands for
    gate = runner.invoke(app, [*driver_changed, "--allow-mismatch", "--fail-above", "3%"])
    assert gate.exit_code == 1 and "shuffle 16777216 float32 SLOWER*" in flat(gate.stderr)


def test_some_rows_not_comparable_leave_the_gate_to_the_others(tmp_path):
    """A file whose shuffle row was CUPTI-timed: that row gets no verdict, and float4's
    regression still fails the gate."""
    b_rows = [
        timed("float4", 60.0, 4),
        dataclasses.replace(timed("shuffle", 70.0, 5), timer="cupti"),
        timed("cupy", 100.2, 6, True),
    ]
    write_results(tmp_path / "a", META, A_ROWS)
    write_results(tmp_path / "b", META, b_rows)
    gate = runner.invoke(
        app, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--fail-on-regression"]
    )
    assert gate.exit_code == 1
    said = flat(gate.stderr)
    assert "gate: 1 of 2 kernel rows NOT COMPARABLE (timer events != cupti)" in said
    assert (
        "regression: reduce float4 16777216 float32 SLOWER" in said
        and "shuffle" not in (said.split("regression:")[1])
    )


def test_an_old_results_file_without_the_new_fields_still_compares(tmp_path):
    """A file from before the fingerprint: no compile_flags, power limit, ECC, MIG, fill,
    clocks or fingerprint. Its unknown keys are no mismatch: the verdicts are given."""
    write_results(tmp_path / "old", META, A_ROWS)
    document = json.loads((tmp_path / "old.json").read_text())
    for key in ("compile_flags", "fingerprint"):
        del document["meta"][key]
    for key in ("power_limit_w", "ecc", "mig"):
        del document["meta"]["device"][key]
    for key in ("fill", "clocks"):
        del document["meta"]["timing"][key]
    (tmp_path / "old.json").write_text(json.dumps(document))
    old_meta, _ = read_results(tmp_path / "old.json")
    assert old_meta.compile_flags == "" and old_meta.device.ecc == ""
    write_results(tmp_path / "new", other(), B_ROWS)
    args = ["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--json"]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert {p["variant"]: p["verdict"] for p in json.loads(shown.stdout)} == {
        "shuffle": "SLOWER",
        "float4": "SAME",
        "cupy": "SAME",
    }
    assert all(p["mismatch"] == [] for p in json.loads(shown.stdout))


def test_results_files_and_reports_show_the_fingerprint(tmp_path):
    _, json_path = write_results(tmp_path / "r", META, A_ROWS)
    assert json.loads(json_path.read_text())["meta"]["fingerprint"] == fingerprint(META)
    assert read_results(json_path)[0] == META  # written for readers, not read back
    table = runner.invoke(app, ["report", str(json_path)], env=WIDE)
    assert table.exit_code == 0 and "fingerprint: gpu NVIDIA H100 80GB HBM3, driver 580.95" in (
        flat(table.stdout)
    )
    markdown = runner.invoke(app, ["report", str(json_path), "-f", "markdown"])
    assert "fingerprint: gpu NVIDIA H100 80GB HBM3" in markdown.stdout


# ---------------------------------------------------------------- history


def _runs(path: Path, *metas_medians: tuple[RunMeta, float]) -> None:
    with History(path) as history:
        for i, (meta, median) in enumerate(metas_medians):
            meta = dataclasses.replace(meta, started=f"2026-11-2{i}T10:00:00+00:00", git_sha=f"c{i}")
            history.import_run(meta, [timed("float4", median, seed=i)], source=f"run{i}")


def _verdicts(result) -> list[str]:
    """The `vs previous` cell of each run, its lines joined where the table wrapped it."""
    verdicts: list[str] = []
    for line in (ln for ln in result.stdout.splitlines() if ln.startswith("│")):
        cells = [c.strip() for c in line.split("│")]
        if cells[2]:  # the run id: a new row
            verdicts.append(cells[-2])
        elif cells[-2]:
            verdicts[-1] += " " + cells[-2]
    return verdicts


def test_history_judges_no_run_against_one_of_another_fingerprint(tmp_path):
    """Runs 1-2 on driver 580.95, run 3 10% slower on 575.57, run 4 as slow on 575.57: run 3
    is NOT COMPARABLE (not SLOWER), run 4 is judged against run 3 (SAME)."""
    path = tmp_path / "h.db"
    new_driver = other(driver_version="575.57")
    _runs(path, (META, 100.0), (META, 100.1), (new_driver, 110.0), (new_driver, 110.1))
    with History(path) as history:
        assert [r.fingerprint["driver"] for r in history.runs()] == ["575.57", "575.57", "580.95", "580.95"]
    args = ["history", "reduce", "-v", "float4", "--db", str(path)]
    shown = runner.invoke(app, [*args, "--plot", str(tmp_path / "h.png")], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert _verdicts(shown) == ["", "SAME", "NOT COMPARABLE: driver 580.95 != 575.57", "SAME"]
    assert (tmp_path / "h.png").exists()
    allowed = runner.invoke(app, [*args, "--allow-mismatch"], env=WIDE)
    assert _verdicts(allowed) == ["", "SAME", "SLOWER*", "SAME"]
    assert (
        "verdict*: judged across runs whose fingerprints differ (--allow-mismatch): driver "
        "580.95 != 575.57" in flat(allowed.stderr)
    )
    gate = runner.invoke(app, ["compare", "--against", "last~1", "--fail-above", "3%", "--db", str(path)])
    assert gate.exit_code == 3 and "no kernel row was judged" in flat(gate.stderr)


def test_history_of_identical_fingerprints_is_judged_as_before(tmp_path):
    path = tmp_path / "h.db"
    _runs(path, (META, 100.0), (META, 100.1), (META, 110.0))
    shown = runner.invoke(app, ["history", "reduce", "-v", "float4", "--db", str(path)], env=WIDE)
    assert _verdicts(shown) == ["", "SAME", "SLOWER"]


def test_migration_to_schema_3_fingerprints_the_runs_already_there(tmp_path):
    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    for step in _MIGRATIONS[:2]:
        for statement in step:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    stored = meta_dict(META)
    del stored["fingerprint"], stored["compile_flags"]  # as a version-2 cudabench wrote it
    for n, text in enumerate([json.dumps(stored), "{not json"]):
        db.execute(
            "INSERT INTO runs (started, command, gpu, driver, timing_mode, "
            "cudabench_version, meta_json) VALUES (?, 'c', 'g', 'd', 'cold', '0.1.0', ?)",
            (f"2026-11-2{n}T10:00:00+00:00", text),
        )
    db.execute(
        "INSERT INTO rows (run_id, op, variant, shape, dtype, params, status, time_us, "
        "spread, row_json) VALUES (1, 'reduce', 'float4', '16777216', 'float32', '', "
        "'OK', 50, 0.01, ?)",
        (json.dumps(row_record(timed("float4", 50.0, 1))),),
    )
    db.commit()
    db.close()
    with History(path) as history:
        version = history._db().execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        assert int(version[0]) == SCHEMA_VERSION == 3
        damaged, good = history.runs()
        assert good.fingerprint == {**fingerprint(META), "compile_flags": ""}
        assert damaged.fingerprint == {}  # unreadable metadata: every key unknown
        (found,) = history.case_rows(RowKey("reduce", "float4", "16777216", "float32", ""))
        assert found[0].fingerprint["driver"] == "580.95"
