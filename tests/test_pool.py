"""The worker pool with the fake backend in real worker processes: a worker that crashes,
dies, hangs or sends garbage costs one row, never the sweep."""

import os
import time

import pytest
from conftest import patch_on_import

from cudabench.core.records import Case, KernelVariant, Launch, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution.pool import PoolError, WorkerPool
from cudabench.measure.runner import CaseJob

QUICK = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)


@pytest.fixture(autouse=True)
def fake_backend(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")


def variant(name, entry=None):
    return KernelVariant(
        "reduce", name, f"/k/{name}.cu", (Launch(entry or f"reduce_sum_{name}", 256, "segments"),), "test"
    )


def job(shape, *variants, baselines=("cupy",)):
    return CaseJob(Case("reduce", shape), tuple(variants), baselines, QUICK)


class Events:
    def __init__(self):
        self.rows, self.done, self.begun = [], {}, []

    def started(self, case, name, device):
        self.begun.append((case.shape_text, name, device, time.time()))

    def row(self, job_index, row):
        self.rows.append(row)

    def job_done(self, job_index, rows):
        self.done[job_index] = rows

    def by_name(self):
        return {(r.shape, r.variant): r for rows in self.done.values() for r in rows}


def sweep(jobs, timeout_s=60.0, devices=(0,)):
    events = Events()
    with WorkerPool(list(devices) if devices else None, timeout_s) as pool:
        pool.open()
        pool.run(jobs, events)
        started = pool.started_workers
    return events, started


def test_good_sweep_reuses_one_worker_and_leaves_derived_columns_to_the_sweep():
    events, started = sweep(
        [job((8, 64), variant("float4"), variant("shared")), job((16,), variant("float4"))]
    )
    assert started == 1
    rows = events.by_name()
    assert len(rows) == 5 and all(r.status is Status.OK for r in rows.values())
    assert all(r.speedup is None for r in rows.values())  # sweep.Sweep.derive fills them
    assert all(r.device == 0 for r in rows.values())
    assert [len(events.done[i]) for i in (0, 1)] == [3, 2]


def test_crash_is_a_row_and_a_fresh_worker_finishes_the_job():
    events, started = sweep(
        [
            job((8, 64), variant("float4"), variant("oob", "fake_crash"), variant("shared")),
            job((9,), variant("float4")),
        ]
    )
    rows = events.by_name()
    assert rows[("8x64", "oob")].status is Status.CRASH
    assert "cudaErrorIllegalAddress" in rows[("8x64", "oob")].error
    assert rows[("8x64", "shared")].status is Status.OK  # after the crash, in a new worker
    assert rows[("8x64", "cupy")].status is Status.OK and rows[("9", "float4")].status is Status.OK
    assert [r.variant for r in events.done[0]] == ["float4", "oob", "shared", "cupy"]  # job order
    assert started == 2


def test_a_worker_that_dies_gets_a_crash_row_with_its_exit():
    events, started = sweep([job((8, 64), variant("gone", "fake_die"), variant("float4"))])
    rows = events.by_name()
    assert rows[("8x64", "gone")].status is Status.CRASH
    assert "worker died (exit status 9)" in rows[("8x64", "gone")].error
    assert rows[("8x64", "float4")].status is Status.OK and started == 2


def test_a_hanging_kernel_times_out_and_the_sweep_goes_on():
    begin = time.monotonic()
    events, started = sweep(
        [job((8, 64), variant("float4"), variant("stuck", "fake_hang"), variant("shared"))], timeout_s=1.5
    )
    rows = events.by_name()
    assert rows[("8x64", "stuck")].status is Status.TIMEOUT
    assert "1.5 s" in rows[("8x64", "stuck")].error
    assert rows[("8x64", "shared")].status is Status.OK and rows[("8x64", "cupy")].status is Status.OK
    assert time.monotonic() - begin < 20 and started == 2


def test_garbage_on_the_channel_is_an_error_row():
    events, _ = sweep([job((8, 64), variant("noisy", "fake_garbage"), variant("float4"))])
    rows = events.by_name()
    assert rows[("8x64", "noisy")].status is Status.ERROR
    assert "garbage" in rows[("8x64", "noisy")].error
    assert rows[("8x64", "float4")].status is Status.OK


def test_jobs_spread_over_every_gpu(monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    jobs = [job((n, 64), variant("float4"), variant("shared")) for n in (8, 9, 10, 11, 12, 13)]
    events, started = sweep(jobs, devices=None)
    rows = events.by_name()
    assert started == 2 and len(rows) == 18
    assert {r.device for r in rows.values()} == {0, 1}
    assert all(r.status is Status.OK for r in rows.values())


def test_a_missing_gpu_is_a_pool_error():
    with pytest.raises(PoolError, match="GPU 3 does not exist"):
        sweep([job((8,), variant("float4"))], devices=(3,))


def test_no_backend_is_a_pool_error(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "nosuch")
    with pytest.raises(PoolError, match="unknown backend"):
        sweep([job((8,), variant("float4"))])


def test_a_list_of_gpus_starts_their_workers_together(monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    events, started = sweep([job((n,), variant("float4")) for n in (8, 9, 10, 11)], devices=(1, 0))
    assert started == 2 and {r.device for rows in events.done.values() for r in rows} == {0, 1}


def test_gpus_are_counted_without_a_cuda_context(monkeypatch):
    from cudabench.execution.worker_process import visible_gpu_count_list

    assert visible_gpu_count_list() is None  # the fake backend (autouse fixture): ask a worker
    monkeypatch.setenv("CUDABENCH_BACKEND", "cupy")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert visible_gpu_count_list() == [0, 1]  # CUDA renumbers the visible ones from 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpu_count_list() is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpu_count_list() is None


def test_each_worker_is_shown_its_gpu_alone_where_the_gpus_can_be_counted(monkeypatch):
    """CUDA_VISIBLE_DEVICES for a worker: its own entry (a GPU index, a UUID) of the user's
    list, or its index where NVML counts the host's GPUs; nothing where neither tells."""
    from cudabench.execution import worker_process

    assert worker_process.alone(0) is None  # the fake backend's GPUs are its own
    monkeypatch.setenv("CUDABENCH_BACKEND", "cupy")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-5f1c")
    assert [worker_process.alone(d) for d in (0, 1, 2)] == ["3", "GPU-5f1c", None]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert worker_process.alone(0) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2,-1,1")  # CUDA stops at -1: GPU 1 is hidden
    assert [worker_process.alone(d) for d in (0, 1, 2)] == ["0", "2", None]
    assert worker_process.visible_gpu_count_list() == [0, 1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,1,0")  # a GPU named again ends the list too
    assert [worker_process.alone(d) for d in (0, 1)] == ["1", None]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(worker_process, "nvml_gpu_count", lambda: 4)
    assert (worker_process.alone(3), worker_process.alone(4)) == ("3", None)  # 4: the worker says
    monkeypatch.setattr(worker_process, "nvml_gpu_count", lambda: None)
    assert worker_process.alone(0) is None


def test_workers_that_see_their_gpu_alone_count_one_gpu_and_their_rows_say_which(monkeypatch):
    from cudabench.execution import worker_process

    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")  # what a worker shown one GPU counts
    monkeypatch.setattr(worker_process, "alone", lambda device: str(device))
    events, started = sweep([job((n,), variant("float4")) for n in (8, 9, 10, 11)], devices=(0, 1))
    assert started == 2 and {r.device for rows in events.done.values() for r in rows} == {0, 1}


_SHOWN = """
import os, sys
if "cudabench.execution.worker" in " ".join(sys.argv) or sys.argv[:1] == ["-m"]:
    with open({marker!r}, "a") as f:
        f.write(f"{{os.environ.get('CUDA_VISIBLE_DEVICES')}} {{' '.join(sys.argv[1:3])}}\\n")
"""


def test_a_worker_shown_its_gpu_alone_gets_it_in_its_environment(tmp_path, monkeypatch):
    """The entry `alone` gives reaches the worker's CUDA_VISIBLE_DEVICES, and the worker is
    told device 0 (a sitecustomize in each worker writes what it was given)."""
    from cudabench.execution import worker_process

    marker = tmp_path / "shown"
    (tmp_path / "sitecustomize.py").write_text(_SHOWN.format(marker=str(marker)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")
    monkeypatch.setattr(worker_process, "alone", lambda device: f"GPU-{device}")
    with WorkerPool([0, 1], 60.0) as pool:
        pool.open()
    assert sorted(marker.read_text().splitlines()) == ["GPU-0 --device 0", "GPU-1 --device 0"]


def test_one_gpu_named_twice_is_refused_by_its_pci_bus_id(monkeypatch):
    """CUDA_VISIBLE_DEVICES=0,GPU-<0's UUID>: two workers would time on one GPU at once."""
    import dataclasses
    import subprocess
    import tempfile
    from multiprocessing import Pipe

    from cudabench.backends.fake import FAKE_DEVICE
    from cudabench.execution.worker_process import Worker

    pool = WorkerPool([0, 1], 60.0)
    pool.devices = [0, 1]
    same = dataclasses.replace(FAKE_DEVICE, pci_bus_id="00000000:19:00.0")
    for device in (0, 1):
        inbox, sender = Pipe(duplex=False)
        sender.send(("ready", same, {}, 1))
        proc = subprocess.Popen(["sleep", "30"], start_new_session=True)  # a group, as a worker
        worker = Worker(device, proc, inbox, Pipe(duplex=False)[1], tempfile.TemporaryFile(), visible="0")
        if device == 0:
            assert pool._await_ready(worker) == 1
            proc.kill()
            proc.wait()
            continue
        with pytest.raises(PoolError, match=r"GPU 1 is GPU 0 again \(PCI 00000000:19:00.0\)"):
            pool._await_ready(worker)
        assert proc.poll() is not None  # killed


def test_a_successor_takes_its_gpu_only_once_the_plain_worker_has_exited(tmp_path, monkeypatch):
    """take_over kills the idle plain worker without waiting; the successor, told ("after",
    pid), starts its job only once that process is gone: here its kill comes 1 s late."""
    import threading

    from cudabench.execution import pool as pool_module

    _slow_probe(tmp_path, monkeypatch, 0.2)
    killed: list[float] = []
    real = pool_module.worker_process.let_go

    def late(worker, stop):
        def kill_now():
            killed.append(time.time())
            real(worker, stop)

        threading.Timer(1.0, kill_now).start()

    monkeypatch.setattr(pool_module.worker_process, "let_go", late)
    events = Events()
    with WorkerPool([0], 60.0, preload=("preload_probe",)) as pool:
        pool.open()
        plain = pool.workers[0].proc.pid
        pool.await_successors(("preload_probe",))  # the take-over: the plain one let go
        assert pool.workers[0].proc.pid != plain
        pool.run([job((16,), variant("float4"))], events)
        monkeypatch.setattr(pool_module.worker_process, "let_go", real)
    assert killed and events.begun and events.begun[0][3] >= killed[0]
    assert all(r.status is Status.OK for r in events.rows)


_SLOW_FIRST_LIBRARY_CALL = """
import os, time

# the reduce baseline's first call in a process takes SLOW seconds, as torch's import and CUDA
# start-up do in a fresh worker
SLOW = float(os.environ.get("CUDABENCH_TEST_SLOW_FIRST_LIBRARY_CALL", "0"))


def patch(module):  # cudabench.ops.reduce
    original = module.Reduce.baselines
    first = [True]

    def baselines(self):
        found = original(self)
        library = found["cupy"]

        def slow_once(inputs):
            if first[0]:
                first[0] = False
                time.sleep(SLOW)
            return library(inputs)

        return {**found, "cupy": slow_once}

    module.Reduce.baselines = baselines
"""


def test_a_fresh_workers_start_up_never_costs_a_library_row(tmp_path, monkeypatch):
    """Issue 32 item 6: after a hanging kernel's worker is killed, the fresh worker's first
    library call (torch's import and CUDA start-up, here a planted 2.5 s) is not timed
    against the row's --timeout (1.5 s): the library rows are OK, the hang still TIMEOUT."""
    patch_on_import(tmp_path, "cudabench.ops.reduce", _SLOW_FIRST_LIBRARY_CALL)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    )
    monkeypatch.setenv("CUDABENCH_TEST_SLOW_FIRST_LIBRARY_CALL", "2.5")
    events, started = sweep(
        [job((8, 64), variant("float4"), variant("stuck", "fake_hang")), job((9,), variant("float4"))],
        timeout_s=1.5,
    )
    rows = events.by_name()
    assert rows[("8x64", "stuck")].status is Status.TIMEOUT
    assert rows[("8x64", "cupy")].status is Status.OK, rows[("8x64", "cupy")].error  # fresh worker
    assert rows[("9", "cupy")].status is Status.OK and rows[("9", "float4")].status is Status.OK
    assert started == 2


SLOW_IMPORT = """
import os, time
time.sleep({seconds})
open({marker!r}, "a").write(f"{{os.getpid()}} {{time.time()}}\\n")
"""


def _slow_probe(tmp_path, monkeypatch, seconds):
    """A library whose import takes `seconds` and then notes (pid, time) in the marker."""
    marker = tmp_path / "imported"
    (tmp_path / "preload_probe.py").write_text(SLOW_IMPORT.format(seconds=seconds, marker=str(marker)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("preload_probe",) if self.baselines else ())
    return marker


def _imports(marker):
    """(pid, time) of each import the marker noted."""
    return [(int(p), float(t)) for p, t in (line.split() for line in marker.read_text().splitlines())]


def test_a_successor_imports_the_libraries_while_the_plain_worker_runs_the_jobs_that_need_none(
    tmp_path, monkeypatch
):
    """`preload` (the baselines' libraries, plan.job_libraries): the GPU's plain worker is
    ready without them and runs the job that needs nothing at once; a successor imports them
    (here 2.5 s) and takes over the GPU: the job that needs them starts after the import,
    in the successor, and no row's time holds the import."""
    marker = _slow_probe(tmp_path, monkeypatch, 2.5)
    needs, plain = job((16,), variant("float4")), job((8, 64), variant("float4"), baselines=())
    events = Events()
    with WorkerPool([0], 60.0, preload=("preload_probe",)) as pool:
        pool.open()
        assert not marker.exists()  # open() did not wait for the import
        pool.run([needs, plain], events)
        started = pool.started_workers
    ((_, imported_at),) = _imports(marker)  # imported once, by the successor
    first = {shape: at for shape, _, _, at in reversed(events.begun)}
    assert first["8x64"] < imported_at < first["16"]
    assert started == 2 and all(r.status is Status.OK for r in events.rows) and len(events.rows) == 3


def test_every_gpu_gets_a_successor_and_no_plain_worker_imports_the_library(tmp_path, monkeypatch):
    """Two GPUs: each has a successor importing the library; the jobs that need it wait for
    them, whatever else is queued; the plain workers never import it."""
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    marker = _slow_probe(tmp_path, monkeypatch, 1.0)
    jobs = [job((16,), variant("float4")), job((32,), variant("float4"))]
    jobs.append(job((8, 64), variant("float4"), baselines=()))
    events = Events()
    with WorkerPool([0, 1], 60.0, preload=("preload_probe",)) as pool:
        pool.open()
        plain = {w.proc.pid for w in pool.workers.values()}
        pool.run(jobs, events)
        started = pool.started_workers
    imports = _imports(marker)
    assert imports and not plain & {pid for pid, _ in imports}  # the successors' (one may be cut off)
    first = {shape: at for shape, _, _, at in reversed(events.begun)}
    assert min(first["16"], first["32"]) > min(at for _, at in imports)
    assert started == 4 and all(r.status is Status.OK for r in events.rows) and len(events.rows) == 5


def test_await_successors_waits_for_the_import_and_hands_the_gpu_over(tmp_path, monkeypatch):
    """Between runs (tune's final round, which needs the library): the wait is returned, and
    the GPU's worker is then the successor that imported it."""
    marker = _slow_probe(tmp_path, monkeypatch, 1.5)
    with WorkerPool([0], 60.0, preload=("preload_probe",)) as pool:
        pool.open()
        waited = pool.await_successors(("preload_probe",))
        ((pid, _),) = _imports(marker)
        assert waited > 0.3 and not pool.successors and pool.workers[0].proc.pid == pid
        assert pool.await_successors(("preload_probe",)) < 0.1  # nothing left to wait for
        events = Events()
        pool.run([job((16,), variant("float4"))], events)
    assert all(r.status is Status.OK for r in events.rows) and pool.started_workers == 2


def test_a_pool_kept_for_the_next_run_brings_that_runs_libraries(tmp_path, monkeypatch):
    """A Dask worker's pool outlives a run: opened without libraries (`cluster status`), the
    next run's `bring` starts a successor that imports them and takes the GPU over; asked
    again, nothing more starts."""
    marker = _slow_probe(tmp_path, monkeypatch, 0.5)
    with WorkerPool([0], 60.0) as pool:
        pool.open()
        assert pool.started_workers == 1 and not pool.successors
        pool.bring(("preload_probe",))
        assert pool.started_workers == 2 and pool.coming() == ("preload_probe",)
        pool.bring(("preload_probe",))  # its successor brings them: none more
        assert pool.started_workers == 2
        pool.await_successors(("preload_probe",))
        ((pid, _),) = _imports(marker)
        assert pool.workers[0].proc.pid == pid
        pool.bring(("preload_probe",))  # its worker has them now
        assert pool.started_workers == 2


def test_a_ready_successor_that_dies_as_it_waits_costs_nothing(tmp_path, monkeypatch):
    """A successor killed after it said ready (the OOM killer, say) is dropped, not handed the
    GPU; and a worker found dead as it is handed a job gives the job back, with no row: every
    row comes back OK, the library's job in a worker that imports it."""
    import signal

    _slow_probe(tmp_path, monkeypatch, 0.0)
    with WorkerPool([0], 60.0, preload=("preload_probe",)) as pool:
        pool.open()
        deadline = time.monotonic() + 60
        while pool.successors.coming and time.monotonic() < deadline:
            pool.successors.listen(pool.info.name, 0.25)
        os.kill(pool.successors.ready[0].proc.pid, signal.SIGKILL)
        time.sleep(0.5)
        events = Events()
        pool.run([job((16,), variant("float4")), job((8, 64), variant("float4"), baselines=())], events)
        assert not pool.successors and pool.started_workers == 2  # dropped, not handed the GPU
        plain = pool.workers[0]
        plain.proc.kill()  # dead while idle: the next job's hand-over finds it gone
        plain.proc.wait()
        again = Events()
        pool.run([job((32,), variant("float4"))], again)
    assert len(events.rows) == 3 and all(r.status is Status.OK for r in events.rows)
    assert len(again.rows) == 2 and all(r.status is Status.OK for r in again.rows)


def test_a_preload_that_hangs_costs_its_successor_and_no_row(tmp_path, monkeypatch):
    """A successor whose import never ends is dropped after the start-up time; the plain
    workers then run the jobs that need the library (they import it), and every row is OK."""
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    (tmp_path / "hanging_probe.py").write_text("import time\ntime.sleep(600)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(CaseJob, "libraries", lambda self: ("hanging_probe",) if self.baselines else ())
    jobs = [job((16,), variant("float4")), job((8, 64), variant("float4"), baselines=())]
    with WorkerPool([0, 1], 60.0, startup_s=8.0, preload=("hanging_probe",)) as pool:
        pool.open()
        events = Events()
        pool.run(jobs, events)
        started, left = pool.started_workers, len(pool.successors)
    assert started == 4 and not left
    assert all(r.status is Status.OK for r in events.rows) and len(events.rows) == 3


def test_a_job_whose_op_file_does_not_load_is_rows_that_say_so_not_a_pool_error(tmp_path):
    """The pool asks each job which libraries its baselines need; an op file that does not
    load (a Dask node without the parent's path) leaves that to the worker's rows."""
    broken = tmp_path / "op.py"
    broken.write_text("raise RuntimeError('this op file is broken')\n")
    bad = CaseJob(Case("reduce", (16,)), (variant("float4"),), ("cupy",), QUICK, op_file=str(broken))
    events, _ = sweep([bad, job((32,), variant("float4"))])
    assert [r.status for r in events.done[1]] == [Status.OK, Status.OK]
    assert len(events.done[0]) == 2 and Status.OK not in {r.status for r in events.done[0]}
    assert "this op file is broken" in events.done[0][0].error


def test_a_successor_on_another_gpu_model_is_dropped_and_one_that_matches_waits_ready(tmp_path, monkeypatch):
    """successors.py: each successor's ready is checked against the run's GPU model (one run
    needs identical GPUs); a mismatch is killed, with no row; a match waits to take over."""
    from cudabench.execution.successors import Successors

    _slow_probe(tmp_path, monkeypatch, 0.0)
    for model, kept in (("Another GPU", 0), (None, 1)):
        successors = Successors("events", ("preload_probe",), 60.0)
        try:
            assert successors.spawn([0]) == 1 and successors.bringing() == ("preload_probe",)
            deadline = time.monotonic() + 60
            while successors.coming and time.monotonic() < deadline:
                successors.listen(model, 0.25)
            assert len(successors) == kept and len(successors.ready) == kept and not successors.bringing()
        finally:
            successors.close()


def test_close_lets_idle_workers_stop_and_kills_a_busy_one_without_waiting_for_either(monkeypatch):
    from cudabench.execution import worker_process

    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    with WorkerPool([0, 1], 60.0) as pool:
        pool.open()
        pool.run([job((8,), variant("float4"))], Events())
        idle, busy = pool.workers[0], pool.workers[1]
        busy.job = 7  # as if a job were under way (Ctrl-C, an error): it must not run on
        began = time.monotonic()
        pool.close()
        assert time.monotonic() - began < 0.2 and not pool.workers
    assert idle.proc in worker_process._leaving and busy.proc in worker_process._leaving
    assert idle.proc.wait(10) == 0  # told "stop": it returned from serve
    assert busy.proc.wait(10) < 0  # killed
    worker_process.reap()
    assert idle.proc not in worker_process._leaving and busy.proc not in worker_process._leaving


def test_a_successor_told_after_runs_nothing_until_that_process_has_exited():
    """take_over kills the GPU's idle plain worker without waiting for it and sends the
    successor ("after", pid): the successor's next job starts once that process is gone."""
    import subprocess

    from cudabench.execution import worker_process

    worker = worker_process.spawn(0, "events")
    try:
        assert worker.inbox.poll(60) and worker.inbox.recv()[0] == "ready"
        leaving = subprocess.Popen(["sleep", "0.8"])
        began = time.monotonic()
        worker.outbox.send(("after", leaving.pid))
        worker.outbox.send(("job", 0, job((8,), variant("float4"))))
        assert worker.inbox.poll(30)
        first = worker.inbox.recv()
        waited = time.monotonic() - began
        assert first[0] == "started" and leaving.poll() is not None and waited > 0.6
        leaving.wait()
        while worker.inbox.recv()[0] != "done":
            pass
        began = time.monotonic()
        worker.outbox.send(("after", leaving.pid))  # gone already: nothing to wait for
        worker.outbox.send(("job", 1, job((8,), variant("float4"))))
        assert worker.inbox.poll(30) and worker.inbox.recv()[0] == "started"
        assert time.monotonic() - began < 0.5
    finally:
        worker_process.kill(worker)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")
def test_without_a_pidfd_the_successor_reads_proc_until_the_old_worker_is_a_zombie():
    """Where pidfd_open is refused (an older container's seccomp), /proc tells the exit."""
    import subprocess
    import threading

    from cudabench.execution.worker import _await_exit_by_proc

    leaving = subprocess.Popen(["sleep", "0.5"])
    began = time.monotonic()
    waiter = threading.Thread(target=_await_exit_by_proc, args=(leaving.pid,))
    waiter.start()
    waiter.join(10)
    assert not waiter.is_alive() and time.monotonic() - began > 0.4
    assert leaving.returncode is None  # a zombie, not reaped: that is exited enough
    leaving.wait()
    _await_exit_by_proc(leaving.pid)  # gone: at once


def test_a_dask_workers_pool_that_fails_to_open_leaves_no_successor_behind(tmp_path, monkeypatch):
    """cluster_node opens the pool itself (no executor closes it): a plain worker that does
    not start must not leave the successor started beside it running."""
    from cudabench.execution import cluster_node, worker_process

    _slow_probe(tmp_path, monkeypatch, 30)  # still importing when the plain worker fails

    def fails(self, worker):
        raise PoolError("planted: the plain worker did not start")

    monkeypatch.setattr(WorkerPool, "_await_ready", fails)
    monkeypatch.setattr(cluster_node, "_POOL", {})
    before = len(worker_process._leaving)
    with pytest.raises(PoolError, match="planted"):
        cluster_node._worker_pool(10.0, ("preload_probe",), bring=False)
    gone = worker_process._leaving[before:]
    assert len(gone) == 2 and all(proc.wait(10) is not None for proc in gone)  # both let go
    assert not cluster_node._POOL
