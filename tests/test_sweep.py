"""The sweep below the CLI (cudabench/execution/sweep.py): plan, run in process through the fake
backend, rows streamed and saved as they end, Ctrl-C kept; no typer, no printing."""

import dataclasses
import json

import pytest
from conftest import StopAfter, TwoGPUs, run_in_process

from cudabench.core.records import Case, ResultRow, Status
from cudabench.core.shapes import parse_shape
from cudabench.execution import sweep
from cudabench.execution.plan import plan

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)


def test_plan_is_one_job_per_dtype_and_shape():
    work = plan("reduce", [(64, 129), (1000,)], ["float4", "atomic"], None, ["float32", "bfloat16"], **QUICK)
    assert [(j.case.dtype, j.case.shape_text) for j in work.jobs] == [
        ("float32", "64x129"),
        ("float32", "1000"),
        ("bfloat16", "64x129"),
        ("bfloat16", "1000"),
    ]
    assert [v.name for v in work.jobs[2].variants] == ["float4"]  # atomic is float32 only
    assert work.timing.min_samples == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (("nosuch", [(8,)], None, None), "unknown op 'nosuch'"),
        (("reduce", [(8,)], ["flaot4"], None), "did you mean float4"),
        (("reduce", [(8,)], ["atomic"], None, ["float16"]), "no chosen variant of reduce runs in float16"),
    ],
)
def test_bad_usage_is_a_sweep_error(args, message):
    with pytest.raises(sweep.SweepError, match=message):
        plan(*args)


def _run(tmp_path, work, listener=None):
    sweep_ = run_in_process(tmp_path, work, listener)
    return sweep_.stem, sweep_.rows


def test_rows_stream_to_the_listener_and_the_files_as_they_end(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)
    seen = []

    class Listener:
        def started(self, case, name, device):
            pass

        def finished(self, row):
            saved = json.loads(next(tmp_path.glob("*_reduce.json")).read_text())["rows"]
            seen.append((row.variant, len(saved)))

    rows = run_in_process(tmp_path, work, Listener()).rows
    assert [r.variant for r in rows] == ["float4", "cupy", "float4", "cupy"]
    assert [n for _, n in seen] == [1, 2, 3, 4]  # each row was on disk when it was reported


def test_ctrl_c_keeps_the_finished_rows(tmp_path):
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)

    with pytest.raises(sweep.Interrupted) as info:
        _run(tmp_path, work, StopAfter(2))
    doc = json.loads(info.value.path.read_text())
    assert doc["meta"]["complete"] is False and len(doc["rows"]) == 2 == len(info.value.rows)


def test_one_shape_in_two_spellings_runs_once():
    work = plan(
        "reduce", [parse_shape(s) for s in ("1024", "2^10", "1e3", "1000")], ["float4"], None, None, **QUICK
    )
    assert [j.case.shape_text for j in work.jobs] == ["1024", "1000"]


def test_a_sweep_writes_to_its_sinks_alike(tmp_path):
    """Every sink hears each row once as it ends, each job's rows with their speedups, and the
    final rows: the results files, the database and the progress are three such sinks, and a
    fourth (here a list) needs no change to the sweep."""
    from conftest import fake_session

    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, **QUICK)

    class Collect:
        problem = ""

        def __init__(self):
            self.rows, self.jobs, self.final, self.started_ = [], [], None, 0

        def started(self, case, name, device):
            self.started_ += 1

        def row(self, meta, rows, row):
            self.rows.append(row.variant)

        def job_done(self, meta, rows, finished):
            self.jobs.append([r.speedup is not None for r in finished if not r.is_baseline])

        def finish(self, meta, rows):
            self.final = (meta.complete, len(rows))

        def cut_short(self, meta, rows):
            pass

    collect = Collect()
    with fake_session() as session:
        run = session.start(work.op_label, work.timing, "test", output=tmp_path, record=False)
        assert [type(s).__name__ for s in run.sinks] == ["ResultsFiles", "Progress"]
        run.sinks.append(collect)
        run.run(work.jobs)
        csv_path, json_path = run.finish()
    assert collect.rows == ["float4", "cupy", "float4", "cupy"] and collect.started_ == 4
    assert collect.jobs == [[True], [True]]  # the speedups were in when the job was handed over
    assert collect.final == (True, 4)
    assert json.loads(json_path.read_text())["meta"]["complete"] is True


def test_a_database_that_fails_mid_run_is_a_problem_not_the_end(tmp_path):
    from cudabench.execution.sinks import HistoryRecord

    class Broken:
        path = tmp_path / "history.db"

        def add_run(self, meta, tag):
            import sqlite3

            raise sqlite3.OperationalError("disk I/O error")

        def close(self):
            pass

    sink = HistoryRecord(Broken(), "tag")  # type: ignore[arg-type]
    sink.row(None, [], None)  # type: ignore[arg-type]
    assert "disk I/O error; the run goes on" in sink.problem and sink.history is None


def _sweep_on(tmp_path, work, executor=None):
    from conftest import fake_session

    with fake_session() as session:
        run = session.start(work.op_label, work.timing, "test", output=tmp_path, record=False)
        if executor is not None:
            run.executor = executor(run.executor)
        run.run(work.jobs)
        run.finish()
        return run, run.executor


def test_on_several_gpus_cases_go_out_in_parts_longest_first_and_come_back_whole(tmp_path):
    """Issue 45: each variant alone and the baselines together, the biggest case first; the
    rows, their order and their speedups are the uncut sweep's, and the run notes each
    GPU's work and the longest row."""
    work = plan("reduce", [(7,), (64, 129)], ["float4", "naive"], None, None, **QUICK)
    one, _ = _sweep_on(tmp_path / "one", work)
    two, executor = _sweep_on(tmp_path / "two", work, TwoGPUs)
    assert executor.parts == [
        ("64x129", ["float4"], []),
        ("64x129", ["naive"], []),
        ("64x129", [], ["cupy"]),
        ("7", ["float4"], []),
        ("7", ["naive"], []),
        ("7", [], ["cupy"]),
    ]
    assert [(r.shape, r.variant, r.status) for r in two.rows] == [
        (r.shape, r.variant, r.status) for r in one.rows
    ]
    assert [r.shape for r in two.rows] == ["7"] * 3 + ["64x129"] * 3  # the jobs' order, not the parts'
    assert all(r.speedup for r in two.rows)
    assert {r.device for r in two.rows} == {0, 1}
    (note,) = [n for n in two.meta.notes if n.startswith("work per GPU")]
    assert "GPU 0" in note and "GPU 1" in note and "the longest row: reduce" in note
    assert "from its first row's start to its last row's end" in note and " of " in note
    assert not any(n.startswith("work per GPU") for n in one.meta.notes)


def test_the_balance_note_says_each_gpus_work_of_its_span():
    """Issue 45: a GPU busy 3 s of the 5 s from its first row's start to its last row's end
    waited 2 s (for a job, the parent, a successor): the note says both; a GPU with no span
    says its work alone."""
    from cudabench.execution.parts import balance_note

    rows = [
        ResultRow.of(Case("reduce", (7,)), name, Status.OK).ran_on(device, "h")
        for name, device in (("float4", 0), ("naive", 0), ("cupy", 1))
    ]
    rows = [dataclasses.replace(r, setup_s=0.5, measure_s=1.0) for r in rows]
    note = balance_note(rows, {("h", 0): (10.0, 15.0)})
    assert note.startswith("work per GPU (its rows' set-up and timing, of the time from its first")
    assert "GPU 0 3.0 of 5.0 s, GPU 1 1.5 s;" in note
    assert balance_note(rows[:2], {("h", 0): (10.0, 15.0)}) == ""  # one GPU: nothing to balance
    assert "GPU 0 3.0 s, GPU 1 1.5 s;" in balance_note(rows)


def test_an_interleaved_case_stays_whole_on_several_gpus(tmp_path):
    work = plan("reduce", [(64, 129)], ["float4", "naive"], None, None, interleave=True, **QUICK)
    _, executor = _sweep_on(tmp_path, work, TwoGPUs)
    assert executor.parts == [("64x129", ["float4", "naive"], ["cupy"])]


def test_two_fake_gpus_run_a_sweep_in_parts_with_real_workers(tmp_path, monkeypatch):
    """The worker pool with two fake GPUs (a worker process each): every row comes back in
    the uncut order with its speedup, the rows ran on both GPUs, and the run says how."""
    from typer.testing import CliRunner

    from cudabench.cli import app

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    out = tmp_path / "run.json"
    args = ["run", "reduce", "-s", "7", "-s", "64x129", "--devices", "all", "-o", str(out)]
    args += ["--min-time", "0", "--min-samples", "2", "--warmup", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    variants = ["atomic", "float4", "naive", "shared", "shuffle", "cupy"]
    assert [(r["shape"], r["variant"]) for r in doc["rows"]] == [
        (s, v) for s in ("7", "64x129") for v in variants
    ]
    assert all(r["status"] == "OK" and r["speedup"] for r in doc["rows"])
    assert {r["device"] for r in doc["rows"]} == {0, 1}
    assert any(n.startswith("work per GPU") for n in doc["meta"]["notes"])


def test_parts_with_a_past_go_out_by_the_seconds_they_took():
    """Issue 45: the history's seconds order the parts (reduce's naive at 2^30 took 19 s,
    more than any bigger case); a part without a past is guessed from its bytes at the
    seconds a byte of those with one; no past at all: by bytes, the biggest case first."""
    from cudabench.execution.parts import Parts, split

    work = plan("reduce", [(7,), (64, 129)], ["float4", "naive"], None, None, **QUICK)

    def names(parts):
        return [(p.case.shape_text, [v.name for v in p.variants], list(p.baselines)) for p in parts.jobs]

    def past(part):
        return 9.0 if part.case.shape_text == "7" and [v.name for v in part.variants] == ["naive"] else 1.0

    ordered = split(work.jobs, 2, past)
    assert names(ordered)[0] == ("7", ["naive"], []) and ordered.owner[0] == 0
    assert sorted(ordered.count) == [3, 3]
    assert names(split(work.jobs, 2, lambda part: None))[0][0] == "64x129"
    naive = ("7", ["naive"], [])
    only_naive = split(work.jobs, 2, lambda part: 9.0 if names(Parts([part], [0], [1]))[0] == naive else None)
    assert names(only_naive)[0][0] == "64x129"  # 9 s for 28 bytes: the bigger case guessed longer


def test_one_gpu_whose_library_comes_later_runs_its_kernels_apart_from_the_library_rows(monkeypatch):
    """One GPU whose successor is still importing torch (pool.py): each job that needs torch
    is cut in two in place, its CUDA variants and its baselines, so the plain worker has the
    kernels to run meanwhile; without a library coming, or interleaved, the jobs stay whole."""
    from cudabench.execution.parts import split
    from cudabench.measure.runner import CaseJob

    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("torch",) if "torch" in self.baselines else ())
    work = plan("reduce", [(7,), (64, 129)], ["float4", "naive"], None, None, **QUICK)
    jobs = [dataclasses.replace(work.jobs[0], baselines=("cupy", "torch")), work.jobs[1]]

    def names(parts):
        return [(p.case.shape_text, [v.name for v in p.variants], list(p.baselines)) for p in parts.jobs]

    cut = split(jobs, 1, None, frozenset({"torch"}))
    assert names(cut) == [
        ("7", ["float4", "naive"], []),
        ("7", [], ["cupy", "torch"]),
        ("64x129", ["float4", "naive"], ["cupy"]),  # needs nothing: whole
    ]
    assert cut.owner == [0, 0, 1] and cut.count == [2, 1]
    assert len(split(jobs, 1, None).jobs) == 2
    together = dataclasses.replace(jobs[0].timing, interleave=True)
    interleaved = [dataclasses.replace(j, timing=together) for j in jobs]
    assert len(split(interleaved, 1, None, frozenset({"torch"})).jobs) == 2


def test_a_sweep_on_one_gpu_cuts_its_jobs_apart_only_while_a_library_is_coming(tmp_path, monkeypatch):
    """Through the sweep: one GPU whose pool still has torch coming (`executor.coming()`)
    gets each torch job as two parts, and the rows come back in the job's order with their
    speedups; tune's rounds (`whole`) go out as they are whatever is coming."""
    from conftest import TwoGPUs, fake_session

    from cudabench.measure.runner import CaseJob

    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("torch",) if self.baselines else ())

    class OneGPUImporting(TwoGPUs):
        def __init__(self, inner):
            super().__init__(inner)
            self.devices = [0]

        def coming(self):
            return ("torch",)

    work = plan("reduce", [(64, 129)], ["float4", "naive"], None, None, **QUICK)
    one, executor = _sweep_on(tmp_path / "cut", work, OneGPUImporting)
    assert executor.parts == [("64x129", ["float4", "naive"], []), ("64x129", [], ["cupy"])]
    assert [r.variant for r in one.rows] == ["float4", "naive", "cupy"] and all(r.speedup for r in one.rows)
    with fake_session() as session:
        run = session.start(work.op_label, work.timing, "test", output=tmp_path / "whole", record=False)
        run.executor = OneGPUImporting(run.executor)
        run.run(work.jobs, whole=True)
        assert run.executor.parts == [("64x129", ["float4", "naive"], ["cupy"])]
        run.finish()


def test_a_sweep_estimates_its_parts_from_the_runs_before_it(tmp_path):
    """The second run of a sweep finds each part's seconds in the history database: the sum
    of its rows' set-up and timing in the first run."""
    from conftest import fake_session

    work = plan("reduce", [(7,)], ["float4", "naive"], None, None, **QUICK)
    with fake_session() as session:
        first_db = tmp_path / "h.db"
        first = session.start(work.op_label, work.timing, "test", output=tmp_path / "a", db=first_db)
        assert first._past_seconds(work.jobs[0]) is None  # nothing before it
        first.run(work.jobs)
        first.finish()
        rows = {r.variant: r for r in first.rows}
        second = session.start(work.op_label, work.timing, "test", output=tmp_path / "b", db=first_db)
        part = dataclasses.replace(work.jobs[0], variants=work.jobs[0].variants[1:], baselines=("cupy",))
        assert second._past_seconds(part) == pytest.approx(
            sum(rows[n].setup_s + rows[n].measure_s for n in ("naive", "cupy"))
        )
        second.finish()


def test_speedups_divide_by_the_first_baseline_timed_or_by_the_time_given():
    from cudabench.core.records import Case, ResultRow, Status

    case = Case("reduce", (64,))
    rows = [
        ResultRow.of(case, "float4", Status.OK, time_us=10.0),
        ResultRow.of(case, "cupy", Status.OK, time_us=20.0, is_baseline=True),
        ResultRow.of(case, "torch", Status.OK, time_us=40.0, is_baseline=True),
    ]
    assert [r.speedup for r in sweep.with_speedups(rows, ("cupy", "torch"))] == [2.0, 1.0, 0.5]
    # torch timed apart (tune: after the final round that held CuPy's row): CuPy's time given
    assert [r.speedup for r in sweep.with_speedups(rows[2:], ("torch",), 20.0)] == [0.5]
    assert [r.speedup for r in sweep.with_speedups(rows[2:], ("torch",))] == [1.0]


def test_a_job_timed_apart_divides_its_speedups_by_the_time_it_is_given(tmp_path):
    """tune's torch row, timed after the final round that held CuPy's: the sweep divides its
    speedup by CuPy's time (CaseJob.divide_by_us), not by its own, and says nothing of every
    baseline failing from a job that holds only some of them."""
    from conftest import fake_session

    from cudabench.core.records import Case
    from cudabench.core.timing import TimingOptions
    from cudabench.measure.runner import CaseJob

    timing = TimingOptions(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
    job = CaseJob(Case("reduce", (4096,)), (), ("cupy",), timing, divide_by_us=1000.0)
    with fake_session() as session:
        run = session.start("reduce", timing, "test", output=tmp_path, record=False)
        ((row,),) = run.run([job])
        ((alone,),) = run.run([dataclasses.replace(job, divide_by_us=None)])
    assert row.time_us and row.speedup == pytest.approx(1000.0 / row.time_us)
    assert alone.speedup == pytest.approx(1.0)
