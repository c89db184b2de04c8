"""The history database without a GPU: rows land as they end, concurrent writers, an
interrupted run, import, migration from an older schema, history and --against verdicts on a
planted regression, and corrupt or newer databases as one line."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from conftest import StopAfter, fake_session, run_in_process
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE, FakeBackend
from cudabench.cli import app
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution import sweep
from cudabench.execution.plan import plan
from cudabench.record.history import History, HistoryError
from cudabench.record.history_schema import _MIGRATIONS, SCHEMA_VERSION
from cudabench.record.results import write_results

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
QUICK_CLI = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
runner = CliRunner()


def meta(started: str, sha: str = "abc", command: str = "cudabench run reduce") -> RunMeta:
    return RunMeta(
        device=FAKE_DEVICE,
        timing_mode="hot",
        command=command,
        started=started,
        cudabench_version="0.1.0",
        cupy_version="",
        nvcc_version="",
        git_sha=sha,
        timing=TimingOptions(),
    )


def timed(variant: str, median_us: float, seed: int, shape: str = "16777216") -> ResultRow:
    """A row with 30 samples scattered 0.5% around a median."""
    rng = random.Random(seed)
    samples = tuple(median_us * (1 + rng.uniform(-0.005, 0.005)) for _ in range(30))
    ordered = sorted(samples)
    return ResultRow(
        "reduce",
        shape,
        "float32",
        variant,
        Status.OK,
        time_us=ordered[15],
        min_us=ordered[0],
        spread=0.008,
        samples=30,
        samples_us=samples,
    )


def test_rows_land_as_they_end_and_the_run_completes(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)
    backend = FakeBackend()
    history = History(tmp_path / "h.db").open()
    seen = []

    class Listener:
        def started(self, case, name, device):
            pass

        def finished(self, row):
            with sqlite3.connect(tmp_path / "h.db") as other:  # a second reader, meanwhile
                seen.append(other.execute("SELECT COUNT(*) FROM rows").fetchone()[0])

    with fake_session(backend) as session:
        done = session.start(
            work.op_label,
            work.timing,
            "t",
            output=tmp_path,
            db=tmp_path / "h.db",
            tag="first",
            listener=Listener(),
        )
        done.run(work.jobs)
        assert seen == [1, 2, 3, 4]  # each row was in the database when it was reported
        (run,) = history.runs()
        assert not run.complete and run.tag == "first"
        session.finish()
    (run,) = history.runs()
    loaded_meta, rows = history.load(run.id)
    assert run.complete and loaded_meta.complete and rows == done.rows  # speedups included


def test_interrupted_run_keeps_its_rows(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)
    history = History(tmp_path / "h.db").open()

    with pytest.raises(sweep.Interrupted):
        run_in_process(tmp_path, work, StopAfter(2), db=tmp_path / "h.db")
    (run,) = history.runs()
    assert not run.complete and len(history.load(run.id)[1]) == 2


def test_two_writers_at_once_lose_nothing(tmp_path):
    """Deterministic: the second writer tries to write while the first holds an open write
    transaction (it commits only after the second has started its write), so a database
    without WAL and a busy timeout fails here every time, not 6 runs in 7."""
    import threading
    import time

    path = tmp_path / "h.db"
    first = History(path).open()
    opened, holding, attempting = threading.Event(), threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def write_second() -> None:
        second = History(path).open()  # its own connection, made in its thread
        opened.set()
        holding.wait(30)
        try:
            attempting.set()
            begin = time.monotonic()
            run = second.add_run(meta("2026-11-23T10:00:01+00:00"), tag="w1")
            outcome["waited"] = time.monotonic() - begin
            for i in range(40):
                second.add_row(run, timed(f"v{i}", 10.0 + i, seed=i))
        except (sqlite3.Error, HistoryError) as exc:  # "database is locked": what this tests
            outcome["error"] = exc
        finally:
            second.close()

    thread = threading.Thread(target=write_second)
    thread.start()
    assert opened.wait(30)
    first.db.execute("BEGIN IMMEDIATE")  # type: ignore[union-attr]
    run = first.add_run(meta("2026-11-23T10:00:00+00:00"), tag="w0")
    for i in range(20):
        first.add_row(run, timed(f"v{i}", 10.0 + i, seed=i))
    holding.set()
    assert attempting.wait(30)
    time.sleep(0.5)  # the second writer is blocked on our lock by now
    with sqlite3.connect(path, timeout=5) as reader:  # WAL: a reader is not blocked meanwhile
        assert reader.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    first.db.execute("COMMIT")  # type: ignore[union-attr]
    for i in range(20, 40):
        first.add_row(run, timed(f"v{i}", 10.0 + i, seed=i))
    thread.join(60)
    first.close()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["waited"] > 0.2  # it waited for the lock instead of failing
    with History(path) as history:
        runs = history.runs()
        assert sorted(r.tag for r in runs) == ["w0", "w1"]
        assert all(len(history.load(r.id)[1]) == 40 for r in runs)
        assert history.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # type: ignore[union-attr]


def _open_at(path: str, barrier) -> str:  # a process of the test below
    barrier.wait()
    try:
        with History(Path(path)):
            return "ok"
    except HistoryError as exc:
        return str(exc)


def test_runs_opening_a_new_database_at_the_same_moment_all_open_it(tmp_path):
    """Six processes at a barrier, a fresh database each round: SQLite can answer "database
    is locked" at once to one of them (it switches a new file to WAL under an exclusive lock
    and does not wait where waiting could deadlock; 4 of 40 rounds before History retried)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(6) as pool:
        for round_ in range(15):
            barrier = manager.Barrier(6)
            path = str(tmp_path / f"h{round_}.db")
            answers = pool.starmap(_open_at, [(path, barrier)] * 6)
            assert answers == ["ok"] * 6, answers


def test_migration_from_schema_1_keeps_rows(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    for statement in _MIGRATIONS[0]:
        db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    old_meta = meta("2026-11-20T10:00:00+00:00")
    from cudabench.record.results import meta_dict, row_record

    db.execute(
        "INSERT INTO runs (started, command, gpu, driver, timing_mode, cudabench_version,"
        " meta_json) VALUES (?, 'c', 'g', 'd', 'hot', '0.1.0', ?)",
        (old_meta.started, json.dumps(meta_dict(old_meta))),
    )
    row = timed("float4", 20.0, seed=1)
    db.execute(
        "INSERT INTO rows (run_id, op, variant, shape, dtype, status, time_us, spread, "
        "row_json) VALUES (1, 'reduce', 'float4', '16777216', 'float32', 'OK', 20, 0.01, ?)",
        (json.dumps({k: v for k, v in row_record(row).items() if k != "params"}),),
    )
    db.commit()
    db.close()
    with History(path) as history:
        version = history.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        assert int(version[0]) == SCHEMA_VERSION
        (found,) = history.case_rows(RowKey("reduce", "float4", "16777216", "float32", ""))
        assert found[1].time_us == row.time_us and found[1].params == ""
        # schema 3: the run's fingerprint, computed from its stored metadata
        assert found[0].fingerprint["gpu"] == FAKE_DEVICE.name
        assert found[0].fingerprint["flush"] == "hot"


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.write_bytes(b"this is not sqlite" * 100), "file is not a database"),
        (lambda p: _newer(p), "newer than this cudabench's"),
    ],
)
def test_unusable_database_is_one_line(tmp_path, damage, message):
    path = tmp_path / "h.db"
    damage(path)
    with pytest.raises(HistoryError, match=message):
        History(path).open()
    result = runner.invoke(app, ["history", "reduce", "--db", str(path)])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    out = tmp_path / "res"
    run = runner.invoke(
        app,
        ["run", "reduce", "-s", "7", "-v", "float4", *QUICK_CLI, "-o", str(out), "--db", str(path)],
        env={"CUDABENCH_BACKEND": "fake"},
    )
    assert run.exit_code == 2 and message in run.stderr
    assert list(out.glob("*.json")) and list(out.glob("*.csv"))  # the files are still written


def _newer(path: Path) -> None:
    History(path).open().close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")


def _planted(path: Path) -> None:
    """Three runs of float4 at the same speed, a fourth 10% slower, a fifth back."""
    with History(path) as history:
        for i, (median, tag) in enumerate(
            [(100.0, "base"), (100.2, ""), (99.9, "before-x4"), (110.0, ""), (100.1, "")]
        ):
            rows = [timed("float4", median, seed=i), timed("shuffle", 120.0, seed=10 + i)]
            history.import_run(
                meta(f"2026-11-2{i}T10:00:00+00:00", sha=f"c{i}"), rows, source=f"planted{i}", tag=tag
            )


def test_history_flags_the_planted_regression_only(tmp_path):
    path = tmp_path / "h.db"
    _planted(path)
    result = runner.invoke(
        app,
        [
            "history",
            "reduce",
            "-v",
            "float4",
            "-s",
            "2^24",
            "--db",
            str(path),
            "--plot",
            str(tmp_path / "h.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [ln for ln in result.stdout.splitlines() if "│" in ln and " c" in ln]
    verdicts = [ln.split("│")[-2].strip() for ln in lines]
    assert verdicts == ["", "SAME", "SAME", "SLOWER", "FASTER"]
    assert (tmp_path / "h.png").exists()
    unknown = runner.invoke(app, ["history", "reduce", "-v", "flaot4", "--db", str(path)])
    assert unknown.exit_code == 2 and "did you mean float4" in unknown.stderr


def test_history_shows_timings_not_verify_checks(tmp_path):
    path = tmp_path / "h.db"
    _planted(path)
    check = ResultRow("reduce", "1000x3", "float32", "float4", Status.OK, method="verify")
    odd = ResultRow("reduce", "33", "float32", "float4", Status.OK, method="verify")
    verify = meta("2026-11-27T10:00:00+00:00", command="cudabench verify reduce")
    with History(path) as history:  # a `cudabench verify` and a run's verify pass
        history.import_run(verify, [check], "v1")
        pass_command = "cudabench run reduce -s 2^24 --verify (verify pass)"
        history.import_run(meta("2026-11-28T10:00:00+00:00", command=pass_command), [odd, check], "v2")
        assert {k.shape for k in history.keys("reduce")} == {"16777216"}
        assert {k.shape for k in history.keys("reduce", checks=True)} == {"16777216", "1000x3", "33"}
        (float4,) = [k for k in history.keys("reduce") if k.variant == "float4"]
        assert len(history.case_rows(float4)) == 5  # the planted runs; no check among them
    result = runner.invoke(app, ["history", "reduce", "-v", "float4", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert "1000x3" not in result.stdout and "33 " not in result.stdout
    at_check = runner.invoke(app, ["history", "reduce", "-s", "1000x3", "--db", str(path)])
    assert at_check.exit_code == 2 and "recorded: 16777216)" in at_check.stderr
    only = tmp_path / "only.db"
    with History(only) as history:
        history.import_run(verify, [check], "v")
    none = runner.invoke(app, ["history", "reduce", "--db", str(only)])
    assert none.exit_code == 2 and "no timed reduce rows" in none.stderr
    assert "only verify's checks" in none.stderr


def test_compare_against_a_tag_and_last_gates_on_regressions(tmp_path):
    path = tmp_path / "h.db"
    _planted(path)
    # the newest run (back to 100.1) against the tag: SAME, the gate passes
    ok = runner.invoke(app, ["compare", "--against", "before-x4", "--fail-above", "3%", "--db", str(path)])
    assert ok.exit_code == 0, ok.output
    # against `last`, the run before the newest (the slow one): the newest is FASTER
    slow_vs_base = runner.invoke(app, ["compare", "--against", "last", "--db", str(path)])
    assert slow_vs_base.exit_code == 0 and "FASTER" in slow_vs_base.stdout  # 110 -> 100.1
    with History(path) as history:  # a sixth run, 10% slower again: the gate fails
        history.import_run(
            meta("2026-11-29T10:00:00+00:00", sha="c5"),
            [timed("float4", 110.3, seed=9), timed("shuffle", 120.0, seed=19)],
            source="planted5",
        )
    gate = runner.invoke(app, ["compare", "--against", "base", "--fail-above", "3%", "--db", str(path)])
    assert gate.exit_code == 1 and "regression" in gate.stderr and "float4" in gate.stderr
    missing = runner.invoke(app, ["compare", "--against", "nosuchtag", "--db", str(path)])
    assert missing.exit_code == 2 and "before-x4" in missing.stderr


def test_import_adds_each_file_once_and_reports_bad_ones(tmp_path):
    path = tmp_path / "h.db"
    stem = tmp_path / "old_run"
    _, json_path = write_results(stem, meta("2026-11-01T10:00:00+00:00"), [timed("float4", 50.0, seed=3)])
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    first = runner.invoke(app, ["import", str(json_path), str(bad), "--db", str(path), "--tag", "old"])
    assert first.exit_code == 2 and "imported 1 run(s), 1 row(s)" in first.stderr
    again = runner.invoke(app, ["import", str(json_path.with_suffix(".csv")), "--db", str(path)])
    assert again.exit_code == 0 and "1 already there" in again.stderr
    with History(path) as history:
        (run,) = history.runs()
        assert run.tag == "old" and history.load(run.id)[1][0].time_us == pytest.approx(
            timed("float4", 50.0, seed=3).time_us
        )


def test_import_skips_a_run_the_database_recorded_as_it_ran(tmp_path):
    """`run` records itself; `import results/*.json` after it must not add the same run
    again (a copy without its tag, which `compare --against last` then took as the run
    before: a gate comparing a run with itself)."""
    path = tmp_path / "h.db"
    first, rows = meta("2026-11-01T10:00:00+00:00"), [timed("float4", 50.0, seed=1)]
    with History(path) as history:
        recorded = history.import_run(first, rows, "", "mine")
    _, json_path = write_results(tmp_path / "run", first, rows)
    done = runner.invoke(app, ["import", str(json_path), "--db", str(path)])
    assert done.exit_code == 0 and "imported 0 run(s)" in done.stderr and "1 already there" in done.stderr
    later = meta("2026-11-02T10:00:00+00:00")
    other = write_results(tmp_path / "other", later, [timed("float4", 51.0, seed=2)])[1]
    assert "imported 1 run(s)" in runner.invoke(app, ["import", str(other), "--db", str(path)]).stderr
    with History(path) as history:
        assert [r.id for r in history.runs() if r.tag == "mine"] == [recorded] and len(history.runs()) == 2


def test_an_import_of_nothing_readable_makes_no_database(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    path = tmp_path / "h.db"
    done = runner.invoke(app, ["import", str(bad), "--db", str(path)])
    assert done.exit_code == 2 and "imported 0 run(s)" in done.stderr
    assert not path.exists()


def test_import_takes_a_folder_as_every_results_file_in_it(tmp_path):
    """`cudabench import results/`: each run file in the folder, oldest first, not the
    ceilings or tuning files nor a foreign JSON beside them."""
    folder = tmp_path / "results"
    for n, started in enumerate(("2026-11-02T10:00:00+00:00", "2026-11-01T10:00:00+00:00")):
        write_results(folder / f"run{n}", meta(started), [timed("float4", 50.0 + n, seed=n)])
    (folder / "ceilings.json").write_text('{"H200": {}}')
    path = tmp_path / "h.db"
    done = runner.invoke(app, ["import", str(folder), "--db", str(path)])
    assert done.exit_code == 0, done.output
    assert "imported 2 run(s), 2 row(s)" in done.stderr
    with History(path) as history:
        assert [r.started[:10] for r in history.runs()] == ["2026-11-02", "2026-11-01"]


def test_every_cli_run_lands_in_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    db = tmp_path / "h.db"
    for tag in ("a", "b"):
        result = runner.invoke(
            app,
            [
                "run",
                "reduce",
                "-s",
                "7",
                "-v",
                "float4",
                *QUICK_CLI,
                "-o",
                str(tmp_path / tag),
                "--tag",
                tag,
                "--db",
                str(db),
            ],
        )
        assert result.exit_code == 0, result.output
    with History(db) as history:
        assert [r.tag for r in history.runs()] == ["b", "a"] and all(r.complete for r in history.runs())
    versus = runner.invoke(app, ["compare", "--against", "a", "--db", str(db)])
    assert versus.exit_code == 0 and "float4" in versus.stdout


def test_work_seconds_are_the_newest_rows_set_up_and_timing_on_that_gpu(tmp_path):
    """What parts.split orders a sweep on several GPUs by: the last time each row took on
    this GPU model (its set-up and timing); a key without such a row has none."""
    import dataclasses

    with History(tmp_path / "h.db").open() as history:
        old = history.add_run(meta("2026-11-27T10:00:00+00:00"))
        new = history.add_run(meta("2026-11-27T11:00:00+00:00"))
        row = dataclasses.replace(timed("naive", 1.9e6, 1, "1073741824"), setup_s=2.0, measure_s=17.0)
        history.add_row(old, row)
        history.add_row(new, dataclasses.replace(row, measure_s=5.6))
        history.add_row(new, timed("float4", 20.0, 2))  # no set-up or timing seconds recorded
        elsewhere = dataclasses.replace(FAKE_DEVICE, name="other")
        other = dataclasses.replace(meta("2026-11-27T12:00:00+00:00"), device=elsewhere)
        history.add_row(history.add_run(other), dataclasses.replace(row, measure_s=99.0))
        keys = [row.key, RowKey("reduce", "float4", "16777216", "float32")]
        keys.append(RowKey("reduce", "x", "1", "float32"))
        assert history.work_seconds(keys, FAKE_DEVICE.name) == {row.key: pytest.approx(7.6)}
        checked = history.add_run(meta("2026-11-27T13:00:00+00:00", command="cudabench verify reduce"))
        history.add_row(checked, dataclasses.replace(row, time_us=None, setup_s=0.1, measure_s=None))
        # a later verify check has no timing: the estimate is still the last timed row's
        assert history.work_seconds(keys, FAKE_DEVICE.name) == {row.key: pytest.approx(7.6)}


def test_history_shows_your_own_op_without_ops_folder(tmp_path, monkeypatch):
    """A run of an op from your folder (--ops) lands in the database; `history` reads it back
    by name without the folder (the database is the truth for the ops it holds), and a
    misspelt name is matched against the ops recorded there."""
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    corpus = Path(__file__).parent / "corpus"
    db = tmp_path / "h.db"
    ran = runner.invoke(
        app,
        ["run", "gelu", "-s", "1024", "--ops", str(corpus), "--db", str(db), "-o", str(tmp_path), *QUICK_CLI],
    )
    assert ran.exit_code in (0, 1), ran.output  # the corpus plants wrong variants: FAIL rows are rows
    shown = runner.invoke(app, ["history", "gelu", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "gelu" in shown.stdout and "erf" in shown.stdout
    typo = runner.invoke(app, ["history", "gelux", "--db", str(db)])
    assert typo.exit_code == 2 and "holds rows of gelu (did you mean gelu?)" in " ".join(typo.stderr.split())
    known = runner.invoke(app, ["history", "relu", "--db", str(db)])  # a catalogue op never run
    assert known.exit_code == 2 and "no relu rows in" in " ".join(known.stderr.split())
