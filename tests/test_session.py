"""The session below every front door (cudabench/execution/session.py): the set-up written once, and
no front door that builds its own."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from conftest import fake_session

import cudabench
from cudabench.backends.fake import FakeBackend
from cudabench.core.errors import SweepError
from cudabench.execution.plan import plan
from cudabench.execution.session import InProcess, Session
from cudabench.record.results import read_results

QUICK = dict(min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
PACKAGE = Path(cudabench.__file__).parent
# The front doors: every command, the Python API, and the process `profile` runs under ncu.
FRONT_DOORS = sorted([*PACKAGE.glob("cli/*.py"), *PACKAGE.glob("api/*.py"), PACKAGE / "profiled.py"])
# What only the session may touch: the executors, the sweep's constructor, the run's files
# and metadata, the ceilings' measurement, the tuning file's application.
SET_UP = {
    "cudabench.execution.pool": {"WorkerPool", "PoolError"},
    "cudabench.execution.executors": {"*"},
    "cudabench.execution.cluster": {"*"},
    "cudabench.execution.cluster_connect": {"*"},
    "cudabench.execution.calibration": {"*"},
    "cudabench.execution.sweep": {"Sweep"},
    "cudabench.record.stems": {"result_stem", "check_writable", "claim_stem"},
    "cudabench.execution.plan": {"apply_tuned"},
}
# `history` and `compare --against` read the database; `cluster status` asks the cluster.
READERS = {
    "history_cmd.py": {"cudabench.record.history"},
    "compare_cmd.py": {"cudabench.record.history"},
    "cluster_cmd.py": {"cudabench.execution.cluster", "cudabench.execution.cluster_connect"},
}


def _imports(path: Path) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "*") for alias in node.names]
    return found


@pytest.mark.parametrize("door", FRONT_DOORS, ids=lambda p: p.name)
def test_no_front_door_builds_its_own_set_up(door):
    allowed = READERS.get(door.name, set())
    for module, name in _imports(door):
        banned = SET_UP.get(module, set())
        if module in allowed:
            continue
        assert "*" not in banned and name not in banned, (
            f"{door.name} imports {name} from {module}: front doors reach the executor, the "
            "results files and the ceilings only through cudabench.execution.session"
        )
        if (
            module == "cudabench"
            and name in ("pool", "executors", "cluster", "calibration")
            and f"cudabench.{name}" not in allowed
        ):
            raise AssertionError(f"{door.name} imports cudabench.{name}")
    assert "History(" not in door.read_text() or door.name in READERS


def test_the_check_above_catches_a_door_that_opens_workers(tmp_path):
    planted = tmp_path / "run_cmd.py"
    planted.write_text("from cudabench.execution.pool import WorkerPool\n")
    with pytest.raises(AssertionError, match="only through cudabench.execution.session"):
        test_no_front_door_builds_its_own_set_up(planted)


def test_prepare_puts_the_resolved_clock_into_every_job(tmp_path):
    backend = FakeBackend()
    backend.no_cupti = "no CUPTI here"
    work = plan("reduce", [(64, 129), (7,)], ["float4"], None, None, timer="auto", **QUICK)
    with Session.open(InProcess(backend=backend), timer="auto") as session:
        ready = session.prepare(work, tuned=False)
        sweep = session.start(ready.op_label, ready.timing, "t", record=False, output=tmp_path)
    assert {job.timing.timer for job in ready.jobs} == {"events"} == {ready.timing.timer}
    assert sweep.meta.timing.timer == "events"
    assert any("CUPTI unavailable" in n for n in sweep.meta.notes)


def test_cupti_asked_where_it_cannot_start_is_one_line():
    backend = FakeBackend()
    backend.no_cupti = "no CUPTI here"
    with pytest.raises(SweepError, match="--timer cupti: CUPTI unavailable"):
        Session.open(InProcess(backend=backend), timer="cupti")


def test_an_unwritable_output_is_refused_before_anything_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    work = plan("reduce", [(7,)], ["float4"], None, None, **QUICK)
    with fake_session() as session, pytest.raises(SweepError):
        session.start(work.op_label, work.timing, "t", output=blocker / "sub" / "x.json", record=False)
    assert blocker.read_text() == "x"


def test_a_database_that_cannot_open_is_said_and_the_run_goes_on(tmp_path):
    bad = tmp_path / "db"
    bad.write_text("not a database")
    work = plan("reduce", [(7,)], ["float4"], None, None, **QUICK)
    with fake_session() as session:
        sweep = session.run(work, "t", output=tmp_path / "out", db=bad)
        paths = session.finish()
    assert session.history_error and session.problems == session.history_error
    meta, rows = read_results(paths[1])
    assert meta.complete and [r.variant for r in rows] == ["float4", "cupy"] == [
        r.variant for r in sweep.rows
    ]


def test_the_sweep_fills_the_speedups_once_a_job_is_done(tmp_path):
    work = plan("reduce", [(64, 129)], ["float4"], None, None, **QUICK)
    with fake_session() as session:
        sweep = session.run(work, "t", output=tmp_path, record=False)
    kernel, library = sweep.rows
    assert library.is_baseline and kernel.speedup == pytest.approx(library.time_us / kernel.time_us)


def test_the_workers_preload_the_libraries_of_the_baselines_the_plan_runs(monkeypatch):
    """reduce's torch baseline is a torch_call: a plan that runs it asks the workers to import
    torch as they start; one without baselines (verify's jobs) or without torch asks nothing."""
    from cudabench.execution.plan import job_libraries
    from cudabench.ops import torch_baselines

    monkeypatch.setattr(torch_baselines, "available", lambda: True)
    work = plan("reduce", [(7,)], ["float4"], None, None, **QUICK)
    assert "torch" in work.jobs[0].baselines and job_libraries(work.jobs) == ("torch",)
    bare = [dataclasses.replace(job, baselines=()) for job in work.jobs]
    assert job_libraries(bare) == ()
    cupy_only = [dataclasses.replace(job, baselines=("cupy",)) for job in work.jobs]
    assert job_libraries(cupy_only) == ()
    monkeypatch.setattr(torch_baselines, "available", lambda: False)  # not installed: nothing to import
    assert job_libraries(work.jobs) == ()


def test_a_python_variant_needs_what_its_decorator_names():
    """softmax's triton_rows says needs=("triton", "torch"): a plan that runs it asks the
    first worker to import both, and its job goes there (on four H200s each GPU that ran a
    Triton row spent 4 to 6 s importing torch); CUDA variants alone need nothing."""
    from cudabench.execution.plan import job_libraries

    work = plan("softmax", [(64, 32)], ["triton_rows", "warp_xor"], None, None, warmup=0)
    bare = [dataclasses.replace(job, baselines=()) for job in work.jobs]
    triton = next(v for v in bare[0].variants if v.name == "triton_rows")
    assert triton.needs == ("triton", "torch")
    assert set(job_libraries(bare)) == {"triton", "torch"}
    cuda_only = [dataclasses.replace(job, variants=(job.variants[1],)) for job in bare]
    assert cuda_only[0].variants[0].kind == "cuda" and job_libraries(cuda_only) == ()
