"""Plain workers started before the CLI has loaded (execution/early.py): which command lines
start them, and the pool taking them over (the fake backend, real worker processes)."""

import pytest
import typer

import cudabench
from cudabench.core.records import Case, KernelVariant, Launch, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution import early
from cudabench.execution.pool import WorkerPool
from cudabench.measure.runner import CaseJob


@pytest.fixture(autouse=True)
def nothing_left(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    yield
    early.discard()


@pytest.mark.parametrize(
    ("words", "started"),
    [
        (["run", "reduce", "-s", "2^16"], [(0, "events")]),
        (["tune", "reduce", "--devices", "0,1", "--timer=cupti"], [(0, "cupti"), (1, "cupti")]),
        (["run", "configs/seeds.yaml", "--device=1", "--timer", "both"], [(1, "both")]),
        (["run", "reduce", "--devices", "0", "--devices", "1"], [(1, "events")]),  # the last, as typer
        (["list"], []),
        (["run", "--help"], []),
        (["tune", "reduce", "--space"], []),
        (["run", "reduce", "--cluster", "tcp://node:8786"], []),
        (["run", "reduce", "--devices", "0,x"], []),  # the command says why
        (["run", "reduce", "--devices", "all"], []),  # the fake backend's GPUs: counted by a worker
        ([], []),
    ],
)
def test_the_command_line_says_which_workers_start_early(monkeypatch, words, started):
    spawned = []
    monkeypatch.setattr(early, "spawn", lambda device, timer: spawned.append((device, timer)) or object())
    monkeypatch.setattr(early, "kill", lambda worker: None)
    cudabench._start_early(words)
    assert spawned == started and sorted(early._started) == sorted(started)


def test_a_worker_that_cannot_start_early_is_left_to_the_pool(monkeypatch):
    """Starting early is an optimisation: a spawn that fails (no file descriptors left)
    starts nothing and says nothing; the command's pool starts its workers itself."""

    def fail(device, timer):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(early, "spawn", fail)
    cudabench._start_early(["run", "reduce"])
    assert not early._started


def test_the_pool_takes_the_worker_started_early_and_kills_the_others(monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "2")
    assert early.start((0, 1), "events") == 2
    first, second = early._started[(0, "events")], early._started[(1, "events")]
    case = Case("reduce", (8, 64))
    variant = KernelVariant(
        "reduce", "float4", "/k/float4.cu", (Launch("reduce_sum_float4", 256, "segments"),), "test"
    )
    timing = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)
    rows = []

    class Events:
        def started(self, *args):
            pass

        def row(self, index, row):
            rows.append(row)

        def job_done(self, index, done):
            pass

    with WorkerPool([0], 60.0) as pool:
        pool.open()
        assert pool.workers[0] is first and first.proc.poll() is None  # taken, and running
        assert second.proc.poll() is not None and not early._started  # not asked for: killed
        pool.run([CaseJob(case, (variant,), ("cupy",), timing)], Events())
    assert [r.status for r in rows] == [Status.OK, Status.OK]


def test_a_worker_for_another_clock_is_not_taken(monkeypatch):
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")
    early.start((0,), "cupti")
    stale = early._started[(0, "cupti")]
    with WorkerPool([0], 60.0) as pool:  # events
        pool.open()
        assert pool.workers[0] is not stale and stale.proc.poll() is not None


def test_the_early_words_are_the_commands_own_options():
    """_start_early reads `--devices`, `--timer`, `--cluster`, `--space` and the default
    device 0 from the command line by hand (before typer is loaded): they must stay the
    commands' own."""
    from cudabench.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name in cudabench._EARLY:
        params = {opt: p for p in commands[name].params for opt in p.opts}
        assert {"--devices", "--device", "--timer", "--cluster"} <= set(params)
        assert params["--devices"].default == "0" and params["--timer"].default is None
    assert "--space" in {opt for p in commands["tune"].params for opt in p.opts}


class FakeCuda:
    """libcuda as open_context_early calls it: what it was asked, in order."""

    def __init__(self, init_status=0):
        self.calls, self.init_status = [], init_status

    def cuInit(self, flags):
        self.calls.append(("cuInit", flags))
        return self.init_status

    def cuDeviceGet(self, handle, ordinal):
        self.calls.append(("cuDeviceGet", ordinal))
        return 0

    def cuDevicePrimaryCtxRetain(self, context, handle):
        self.calls.append(("cuDevicePrimaryCtxRetain",))
        return 0


@pytest.mark.parametrize(
    ("init_status", "calls"),
    [
        (0, [("cuInit", 0), ("cuDeviceGet", 3), ("cuDevicePrimaryCtxRetain",)]),
        (100, [("cuInit", 0)]),  # CUDA_ERROR_NO_DEVICE: nothing more; the backend says why
    ],
)
def test_a_worker_starts_cuda_in_a_thread_for_its_own_gpu(monkeypatch, init_status, calls):
    import ctypes

    from cudabench.backends import driver

    cuda = FakeCuda(init_status)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: cuda if name == "libcuda.so.1" else None)
    thread = driver.open_context_early(3)
    thread.join(5.0)
    assert not thread.is_alive() and thread.daemon
    assert cuda.calls == calls


def test_no_driver_leaves_the_early_context_thread_quiet(monkeypatch):
    import ctypes
    import threading

    from cudabench.backends import driver

    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    raised = []
    monkeypatch.setattr(ctypes, "CDLL", missing)
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    driver.open_context_early(0).join(5.0)
    assert raised == []
