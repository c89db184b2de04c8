"""Sweeps on Dask distributed without a GPU: a local cluster of fake-backend workers (each a
Dask worker process with its own cudabench pool), a scheduler that does not answer, and
clusters whose GPUs differ."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

pytest.importorskip("distributed")

from conftest import StopAfter  # noqa: E402

from cudabench.backends.fake import FAKE_DEVICE  # noqa: E402
from cudabench.cli import app  # noqa: E402
from cudabench.core.records import Status  # noqa: E402
from cudabench.execution import cluster, cluster_connect  # noqa: E402

QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
runner = CliRunner()


def test_every_row_arrives_from_a_local_cluster(tmp_path):
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_DEVICES": "2"}
    on_cluster = runner.invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "64x129",
            "-s",
            "1000",
            "-s",
            "7",
            "--cluster",
            "local",
            *QUICK,
            "-o",
            str(tmp_path / "c"),
        ],
        env=env,
    )
    assert on_cluster.exit_code == 0, on_cluster.output
    here = runner.invoke(
        app,
        ["run", "reduce", "-s", "64x129", "-s", "1000", "-s", "7", *QUICK, "-o", str(tmp_path / "h")],
        env=env,
    )
    assert here.exit_code == 0, here.output

    def keys(folder):
        doc = json.loads(next((tmp_path / folder).glob("*.json")).read_text())
        assert doc["meta"]["complete"]
        return sorted((r["shape"], r["variant"], r["params"], r["status"]) for r in doc["rows"])

    assert keys("c") == keys("h") and len(keys("c")) == 3 * 6


def test_a_scheduler_that_does_not_answer_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster_connect, "CONNECT_TIMEOUT_S", 1)
    result = runner.invoke(
        app,
        ["run", "reduce", "-s", "7", "--cluster", "tcp://127.0.0.1:9", "-o", str(tmp_path)],
        env={"CUDABENCH_BACKEND": "fake"},
    )
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no scheduler answered" in lines[0]


def test_a_cluster_of_two_gpu_models_is_refused():
    import dataclasses

    other = dataclasses.replace(FAKE_DEVICE, name="Other GPU")

    class Stub:
        def run(self, function, *args):
            return {"w1": (FAKE_DEVICE, {}, "a"), "w2": (other, {}, "b")}

    with pytest.raises(cluster_connect.ClusterError, match="GPUs differ.*--gpu-model"):
        cluster_connect.survey(Stub(), 10)
    info, _, addresses = cluster_connect.survey(Stub(), 10, gpu_model="other")
    assert info.name == "Other GPU" and addresses == ["w2"]  # only that model's workers
    with pytest.raises(cluster_connect.ClusterError, match="matches 2"):
        cluster_connect.survey(Stub(), 10, gpu_model="GPU")
    with pytest.raises(cluster_connect.ClusterError, match="no workers"):
        cluster_connect.survey(type("Empty", (), {"run": lambda self, f, *a: {}})(), 10)


def test_ctrl_c_cancels_the_rest_and_keeps_the_finished_rows(tmp_path, monkeypatch):
    from cudabench.execution import sweep
    from cudabench.execution.plan import plan
    from cudabench.execution.session import Cluster, Session
    from cudabench.record.results import read_results

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")
    work = plan(
        "reduce",
        [(64, 129), (1000,), (7,), (33,)],
        ["float4"],
        None,
        None,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )

    with Session.open(Cluster("local", 60)) as session:
        with pytest.raises(sweep.Interrupted) as info:
            session.run(work, "t", output=tmp_path, record=False, listener=StopAfter(2))
    saved_meta, rows = read_results(info.value.path)
    assert not saved_meta.complete and len(rows) == 2
    assert all(r.host and r.status.value == "OK" for r in rows)


def test_cluster_status_lists_the_workers():
    result = runner.invoke(
        app,
        ["cluster", "status", "--cluster", "local"],
        env={"CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_DEVICES": "2"},
    )
    assert result.exit_code == 0, result.output
    assert "2 worker(s)" in result.stdout and result.stdout.count("Fake GPU") == 2


def test_a_lost_worker_loses_no_row(tmp_path):
    """A kernel kills its Dask worker mid-task (once): the task runs again on another worker
    and every row arrives."""
    from conftest import write_kernel

    kernels = tmp_path / "k"
    write_kernel(
        kernels / "reduce",
        "killer",
        "",
        header=(
            "// cudabench:\n//   variant: killer\n//   entry: fake_kill_node\n//   block: 256\n"
            "//   grid: segments\n//   about: takes its node down the first time\n"
        ),
    )
    env = {
        "CUDABENCH_BACKEND": "fake",
        "CUDABENCH_FAKE_DEVICES": "2",
        "CUDABENCH_FAKE_KILL_ONCE": str(tmp_path / "killed"),
    }
    result = runner.invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "64x129",
            "-s",
            "1000",
            "-s",
            "7",
            "-v",
            "killer",
            "-v",
            "float4",
            "--kernels",
            str(kernels),
            "--cluster",
            "local",
            *QUICK,
            "-o",
            str(tmp_path / "out"),
        ],
        env=env,
    )
    assert (tmp_path / "killed").exists()  # a worker did die
    assert result.exit_code == 0, result.output
    rows = json.loads(next((tmp_path / "out").glob("*.json")).read_text())["rows"]
    assert len(rows) == 3 * 3 and all(r["status"] == "OK" for r in rows)
    assert "worker(s) left the cluster during the run" in result.stderr  # and it says so


def test_a_job_that_keeps_killing_workers_is_a_crash_row_and_the_rest_run(tmp_path):
    """A kernel that takes its Dask worker down every time: Dask gives up on that task
    (KilledWorker) and the job becomes CRASH rows; the other variants' rows all arrive and
    the run is exit 1 (a failing kernel), not a traceback."""
    from conftest import write_kernel

    kernels = tmp_path / "k"
    write_kernel(
        kernels / "reduce",
        "killer",
        "",
        header=(
            "// cudabench:\n//   variant: killer\n//   entry: fake_kill_node\n//   block: 256\n"
            "//   grid: segments\n//   about: takes its node down every time\n"
        ),
    )
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_DEVICES": "2", "CUDABENCH_FAKE_KILL_ALWAYS": "1"}
    result = runner.invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "7",
            "-s",
            "64x129",
            "-v",
            "killer",
            "-v",
            "float4",
            "--kernels",
            str(kernels),
            "--cluster",
            "local",
            *QUICK,
            "-o",
            str(tmp_path / "out"),
        ],
        env=env,
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    rows = json.loads(next((tmp_path / "out").glob("*.json")).read_text())["rows"]
    statuses = {(r["shape"], r["variant"]): r["status"] for r in rows}
    assert statuses == {
        (shape, name): "CRASH" if name == "killer" else "OK"
        for shape in ("7", "64x129")
        for name in ("killer", "float4", "cupy")
    }
    killed = [r for r in rows if r["variant"] == "killer"]
    assert all("the cluster gave up on this job" in r["error"] for r in killed)


def test_a_job_whose_task_raises_is_error_rows_at_once(monkeypatch, tmp_path):
    """A task that raises (a bug, not a lost node) is not run again (Dask's `retries` would):
    its job is ERROR rows, once."""
    from distributed import Client, LocalCluster

    from cudabench.execution import cluster
    from cudabench.execution.plan import plan

    calls = tmp_path / "calls"  # the task travels as a copy: it counts in a file

    def raises(job, timeout_s, preload=()):
        with open(calls, "a") as handle:
            handle.write(job.case.shape_text + "\n")
        raise RuntimeError("planted")

    monkeypatch.setattr(cluster, "run_job", raises)
    jobs = plan(
        "reduce", [(7,)], ["float4"], None, None, min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0
    ).jobs
    done = {}

    class Events:
        def started(self, case, name, device):
            pass

        def row(self, index, row):
            pass

        def job_done(self, index, rows):
            done[index] = rows

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, resources={"GPU": 1}, dashboard_address=None
        ) as local,
        Client(local) as client,
    ):
        addresses = list(client.scheduler_info()["workers"])
        cluster.on_cluster(client, 10.0, addresses)(jobs, Events())
    assert calls.read_text().split() == ["7"]  # once: not retried
    assert [(r.variant, r.status.value) for r in done[0]] == [("float4", "ERROR"), ("cupy", "ERROR")]
    assert "RuntimeError: planted" in done[0][0].error


@pytest.mark.parametrize(
    "visible, device",
    [
        ("1,0", 1),
        ("0,1", 0),
        ("3", 3),
        ("", 0),
        ("GPU-2c833c6d-2327", 0),
        (" 2 , 0", 2),
    ],
)
def test_a_rows_device_is_the_gpus_index_on_its_host(visible, device, monkeypatch):
    """Two Dask workers on one host each see their GPU as device 0; the row records the
    host's index (dask-cuda puts it first in CUDA_VISIBLE_DEVICES), so rows from the two
    GPUs stay apart."""
    from cudabench.execution.cluster_node import physical_device

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert physical_device() == device


def test_only_one_job_a_worker_is_in_flight(monkeypatch):
    """Jobs go out as workers free up, not all at once: Dask pins a task with resource
    restrictions to a worker when it is submitted, so submitting 16 jobs of unequal length
    at once split them 8 and 8 between two GPUs whatever their lengths. With two workers,
    the third job is handed out only after the first has ended."""
    from cudabench.execution.plan import plan

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    jobs = plan(
        "reduce",
        [(7,), (64,), (1000,), (64, 129), (33,), (5,)],
        ["float4"],
        None,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    ).jobs
    seen: list[tuple[str, int]] = []

    class Events:
        def started(self, case, name, device):
            pass

        def row(self, index, row):
            pass

        def job_done(self, index, rows):
            seen.append(("done", index))

    with cluster.Cluster("local", 30.0) as c:
        c.execute(jobs, Events(), ready=lambda index: seen.append(("ready", index)))
    assert sorted(i for what, i in seen if what == "done") == list(range(6))
    first_done = next(n for n, (what, _) in enumerate(seen) if what == "done")
    # two handed out at the start, a third when the first ended (just before its rows)
    assert [what for what, _ in seen[:first_done]] == ["ready"] * 3
    in_flight = 0
    for what, _ in seen:
        in_flight += 1 if what == "ready" else -1
        assert in_flight <= 3


# ------------------------------------------------------------------ lost workers (issue 46)


def _killer_kernels(folder):
    from conftest import write_kernel

    write_kernel(
        folder / "reduce",
        "killer",
        "",
        header=(
            "// cudabench:\n//   variant: killer\n//   entry: fake_kill_node\n//   block: 256\n"
            "//   grid: segments\n//   about: takes its node down\n"
        ),
    )
    return folder


def _jobs(kernels, shapes, names, baselines=("cupy",)):
    """One job a shape with exactly these variants and baselines (no plan(): its rows are the
    test's, whatever baselines this machine has)."""
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.core.records import Case
    from cudabench.core.timing import TimingOptions
    from cudabench.measure.runner import CaseJob
    from cudabench.ops.discovery import discover

    found = {v.name: v for v in discover("reduce", [BUILTIN_KERNELS, kernels])[0]}
    quick = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)
    return [
        CaseJob(Case("reduce", shape), tuple(found[n] for n in names), tuple(baselines), quick)
        for shape in shapes
    ]


class Collected:
    def __init__(self):
        self.done, self.rows = {}, []

    def started(self, case, name, device):
        pass

    def row(self, index, row):
        self.rows.append(row)

    def job_done(self, index, rows):
        self.done[index] = rows


@pytest.mark.time_limit(240)
def test_a_worker_lost_as_often_as_allowed_costs_no_row_and_no_split(tmp_path, monkeypatch):
    """The job's task takes its worker down twice (ALLOWED_FAILURES): the scheduler runs it a
    third time, whole, and every row arrives; with fewer allowed failures the scheduler would
    give up (KilledWorker) and the job would be split, or the killer lost."""
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    monkeypatch.setenv("CUDABENCH_FAKE_KILL_ONCE", str(tmp_path / "kills"))
    monkeypatch.setenv("CUDABENCH_FAKE_KILLS", "2")
    jobs = _jobs(_killer_kernels(tmp_path / "k"), [(7,)], ["killer", "float4"])
    events = Collected()
    with cluster.Cluster("local", 60.0) as c:
        c.execute(jobs, events)
        notes = list(c.notes)
    assert (tmp_path / "kills").read_text() == "xx"  # two workers did die
    assert [(r.variant, r.status.value) for r in events.done[0]] == [
        ("killer", "OK"),
        ("float4", "OK"),
        ("cupy", "OK"),
    ]
    assert not [n for n in notes if "gave up" in n], notes  # run again whole, never split
    assert [n for n in notes if "left the cluster during the run" in n]


@pytest.mark.time_limit(240)
def test_a_two_row_job_that_keeps_killing_workers_keeps_its_good_row(tmp_path, monkeypatch):
    """The smallest job that can be split: a killer and one baseline. Dask gives up on it, it
    goes out one row a task, and only the killer's row is a CRASH."""
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    monkeypatch.setenv("CUDABENCH_FAKE_KILL_ALWAYS", "1")
    jobs = _jobs(_killer_kernels(tmp_path / "k"), [(7,)], ["killer"])
    events = Collected()
    with cluster.Cluster("local", 60.0) as c:
        c.execute(jobs, events)
        notes = list(c.notes)
    assert [(r.variant, r.status.value) for r in events.done[0]] == [("killer", "CRASH"), ("cupy", "OK")]
    assert "the cluster gave up on this job" in events.done[0][0].error
    assert [n for n in notes if "gave up on the job of reduce 7/float32" in n]


@pytest.mark.time_limit(180)
def test_a_cluster_left_without_workers_ends_the_run_with_rows_saying_why(tmp_path, monkeypatch):
    """Its only worker goes away for good while the second of three jobs is handed out: the
    run does not wait forever. After NO_WORKER_WAIT_S the first job's rows stand, the job in
    flight is CRASH rows (exit 1) and the one never handed out SKIPPED rows, each saying why."""
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")
    monkeypatch.setattr(cluster, "NO_WORKER_WAIT_S", 2.0)
    jobs = _jobs(tmp_path, [(7,), (64,), (1000,)], ["float4"])
    events = Collected()
    with cluster.Cluster("local", 60.0) as c:
        assert cluster.able(c.client, c.workers, False) == 1 == cluster.able(c.client, c.workers, True)
        assert cluster.able(c.client, ["tcp://127.0.0.1:9"], True) == 0  # pinned elsewhere

        def ready(index):
            if index == 1:  # job 0 has ended: its worker goes, and no nanny brings it back
                c.client.cluster.scale(0)
                deadline = time.monotonic() + 60
                while cluster.able(c.client, c.workers, False) and time.monotonic() < deadline:
                    time.sleep(0.1)

        started = time.monotonic()
        c.execute(jobs, events, ready=ready)
        took = time.monotonic() - started
        notes = list(c.notes)
    statuses = {i: [(r.variant, r.status.value) for r in rows] for i, rows in events.done.items()}
    assert statuses == {
        0: [("float4", "OK"), ("cupy", "OK")],
        1: [("float4", "CRASH"), ("cupy", "CRASH")],
        2: [("float4", "SKIPPED"), ("cupy", "SKIPPED")],
    }
    assert all("no worker left in the cluster" in r.error for i in (1, 2) for r in events.done[i])
    assert "lost with the cluster's last worker" in events.done[1][0].error
    assert Status.CRASH.is_failure  # the CLI's exit 1
    assert [n for n in notes if n.startswith("the run ended early: no worker left")]
    assert not [n for n in notes if "ran their unfinished jobs again" in n]  # they did not
    assert took < 60


def test_a_local_cluster_never_closes_a_nanny_whose_worker_is_slow_to_come_back(monkeypatch):
    """Dask's lost-worker-timeout (15 s) closes a nanny whose worker has not come back by
    then: on a loaded host a worker killed again and again is often restarting at that moment,
    every nanny was closed and the run waited forever. cudabench's local clusters set it
    out of reach."""
    import dask

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "15s"}):
        client = cluster_connect.connect("local", fake_workers=1)
        try:
            timeout = dask.config.get("distributed.deploy.lost-worker-timeout")
        finally:
            client.cluster.close()
            client.close()
    from dask.utils import parse_timedelta

    assert parse_timedelta(timeout) >= 24 * 3600


# ------------------------------------------------------------------ parts (issue 45)


def test_a_cluster_takes_the_parts_of_a_case_as_one_hosts_gpus_do(tmp_path, monkeypatch):
    """On two Dask workers a case goes out as parts (each variant alone, its baselines
    together: parts.py), a task each; the rows come back whole, in the case's order."""
    from cudabench.execution.plan import plan
    from cudabench.execution.session import Session

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    work = plan("reduce", [(1000,)], None, None, min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)
    (job,) = work.jobs
    names = [v.label for v in job.variants] + list(job.baselines)
    sent: list[tuple[str, ...]] = []
    with Session(cluster.Cluster("local", 30.0)) as session:
        real = session.executor.client.submit

        def submit(fn, part, *args, **kwargs):
            sent.append(tuple(v.label for v in part.variants) + part.baselines)
            return real(fn, part, *args, **kwargs)

        session.executor.client.submit = submit
        sweep = session.start(work.op_label, work.timing, "test", output=tmp_path)
        (rows,) = sweep.run(work.jobs)
    assert len(job.variants) > 1 and job.baselines
    assert sorted(sent) == sorted([(v.label,) for v in job.variants] + [tuple(job.baselines)])
    assert [r.label for r in rows] == names and all(r.status is Status.OK for r in rows)


def test_parts_that_need_the_successors_libraries_go_out_last():
    """The workers' successors import torch as the run starts: the parts without it first."""
    import dataclasses

    from cudabench.core.records import Case, KernelVariant, Launch
    from cudabench.core.timing import TimingOptions
    from cudabench.measure.runner import CaseJob

    def part(name, needs=()):
        variant = KernelVariant("reduce", name, f"/k/{name}.py", (Launch(name, 256, "segments"),), "t")
        variant = dataclasses.replace(variant, needs=needs)
        return CaseJob(Case("reduce", (8,)), (variant,), (), TimingOptions())

    jobs = [part("a", ("torch",)), part("b"), part("c", ("triton", "torch")), part("d")]
    order = [i for i, _ in cluster._free_first(jobs, ("torch",))]
    assert order == [1, 3, 0, 2]
    assert [i for i, _ in cluster._free_first(jobs, ())] == [0, 1, 2, 3]
