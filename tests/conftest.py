"""Markers: `gpu` tests skip unless CuPy sees a CUDA device; `nvcc` tests skip without nvcc.

Every test has a time limit (`time_limit` in pyproject's pytest options, seconds; a test's own
`@pytest.mark.time_limit(s)` overrides it; 0 turns it off): a test that runs past it fails
with TimeLimit instead of hanging the suite, and one the alarm cannot break (stuck in C code)
ends the session TIME_LIMIT_GRACE_S later with every thread's stack on stderr. This is done
here rather than with pytest-timeout so that it holds wherever the suite runs, the GPU
machines (no package registry) included.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

TIME_LIMIT_GRACE_S = 60.0


class TimeLimit(BaseException):
    """A test ran past its time limit. A BaseException, so that neither the code under test
    nor typer's CliRunner (which catches Exception) can swallow it; not a KeyboardInterrupt,
    which cudabench handles as Ctrl-C."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "time_limit",
        "seconds each test (its setup, call and teardown, each) may run before it fails; 0: none",
        default="0",
    )


def time_limit(item: pytest.Item) -> float:
    """The item's limit in seconds: its `time_limit` marker, else the ini option."""
    marker = item.get_closest_marker("time_limit")
    return float(marker.args[0] if marker is not None else item.config.getini("time_limit") or 0)


@contextlib.contextmanager
def limited(item: pytest.Item, when: str) -> Iterator[None]:
    """SIGALRM raises TimeLimit in the test once its limit has passed (a blocking wait, a
    lock, a subprocess: all are interrupted); faulthandler ends the session if that fails."""
    limit = time_limit(item)
    if (
        limit <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise TimeLimit(
            f"{item.nodeid}: its {when} ran past the time limit of {limit:g} s (tests/conftest.py)"
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    faulthandler.dump_traceback_later(limit + TIME_LIMIT_GRACE_S, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with limited(item, "setup"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with limited(item, "call"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with limited(item, "teardown"):
        yield


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU answers (CuPy)"))
        if "nvcc" in item.keywords and not shutil.which("nvcc"):
            item.add_marker(pytest.mark.skip(reason="nvcc not on PATH"))


def flat(text: str) -> str:
    """Terminal output with rich's line wrapping undone (one space between words)."""
    return " ".join(text.split())


_PATCH_ON_IMPORT = """
import importlib.abc, importlib.machinery, sys


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != {module!r}:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Hook())
"""


def patch_on_import(folder: Path, module: str, patch: str) -> None:
    """Write `folder`/sitecustomize.py: in each process started with `folder` on PYTHONPATH
    (the pool's workers), `patch` (the source of `def patch(module): ...`) changes `module`
    once it is imported, as a planted fault that a monkeypatch in the parent cannot reach."""
    hook = _PATCH_ON_IMPORT.format(module=module)
    (folder / "sitecustomize.py").write_text(hook + "\n\n" + textwrap.dedent(patch))


def write_kernel(folder: Path, name: str, body: str, header: str = "") -> Path:
    """A .cu file with a reduce header for variant `name` and the given kernel body."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.cu"
    head = header or textwrap.dedent(f"""\
        // cudabench:
        //   variant: {name}
        //   entry: {name}
        //   block: 256
        //   grid: segments
        //   about: planted test kernel
        """)
    path.write_text(head + "\n" + textwrap.dedent(body))
    return path


@pytest.fixture(scope="session")
def catalogue_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the tests that compile the whole catalogue (each kernel's own
    compile test, then the README's `cudabench check`), so the catalogue is compiled once."""
    return tmp_path_factory.mktemp("catalogue-cache")


@pytest.fixture
def kernel_dir(tmp_path: Path) -> Path:
    return tmp_path / "my_kernels"


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own history database and tuning file (never results/ of the
    checkout); a test that wants another sets the variable again."""
    monkeypatch.setenv("CUDABENCH_DB", str(tmp_path / "history.db"))
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "tuning.json"))
    # scratch files (profile's request for a command run by hand, workers' logs) in the test's
    # own folder, not left in the machine's /tmp
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # no `% ceiling` unless a test asks: measuring them would run the stream ops first
    monkeypatch.setenv("CUDABENCH_CEILINGS", "off")
    # only the built-in ops, unless a test adds folders (--ops, $CUDABENCH_OPS)
    from cudabench.ops import registry

    monkeypatch.delenv("CUDABENCH_OPS", raising=False)
    registry.use_ops(None)


class StopAfter:
    """A sweep listener that plays Ctrl-C once `rows` rows have ended."""

    def __init__(self, rows: int) -> None:
        self.rows, self.seen = rows, 0

    def started(self, case: object, name: str, device: int) -> None:
        pass

    def finished(self, row: object) -> None:
        self.seen += 1
        if self.seen == self.rows:
            raise KeyboardInterrupt


def fake_session(backend=None):  # type: ignore[no-untyped-def]
    """A session in this process on the fake backend (what the session gives every door)."""
    from cudabench.backends.fake import FakeBackend
    from cudabench.execution.session import InProcess, Session

    return Session.open(InProcess(backend=backend or FakeBackend()))


def run_in_process(tmp_path: Path, work, listener=None, db=None, tag="", backend=None):  # type: ignore[no-untyped-def]
    """Run a plan through a fake in-process session; returns the (unfinished) Sweep. `db`
    records the run in that history database."""
    with fake_session(backend) as session:
        sweep = session.start(
            work.op_label,
            work.timing,
            "test",
            output=tmp_path,
            db=db,
            record=db is not None,
            tag=tag,
            listener=listener,
        )
        sweep.run(work.jobs)
        return sweep


@pytest.fixture(scope="session", autouse=True)
def compiled_catalogue(request: pytest.FixtureRequest) -> None:
    """On a GPU run: every catalogue variant compiled, in every dtype it declares, by parallel
    nvcc processes before the first test, so the GPU tests share one filled compile cache
    instead of each compiling its variants one after another. Nothing on a GPU-free run."""
    gpu_tests = [
        i
        for i in request.session.items
        if "gpu" in i.keywords and getattr(getattr(i, "module", None), "NEEDS_CATALOGUE", True)
    ]  # a module that runs no catalogue kernel says so (NEEDS_CATALOGUE = False)
    if not gpu_tests or not gpu_available() or not shutil.which("nvcc"):
        return
    import os
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    from cudabench.build.compile import compile_variant
    from cudabench.build.nvcc import CompileError
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import all_ops

    arch = f"sm_{cupy.cuda.Device(0).compute_capability}"  # "90" -> sm_90, as DeviceInfo.arch
    work = [
        (v, d)
        for op in all_ops()
        for v in discover(op, [BUILTIN_KERNELS])[0]
        if v.kind == "cuda"
        for d in v.dtypes
    ]

    def build(item):  # type: ignore[no-untyped-def]
        try:
            compile_variant(item[0], arch, item[1])
        except CompileError:
            pass  # the test that runs it says so, as a row

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(build, work))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With $CUDABENCH_TEST_LOG set: each test's phase, outcome and seconds appended as it
    ends, so a GPU run cut off by a time limit still says where its time went."""
    import os

    path = os.environ.get("CUDABENCH_TEST_LOG")
    if path and (report.when == "call" or report.outcome != "passed"):
        with open(path, "a") as log:
            log.write(f"{report.duration:8.2f} {report.outcome:7} {report.when:8} {report.nodeid}\n")


def interrupt(command, env, cwd, ready, group):  # type: ignore[no-untyped-def]
    """Start `command` in its own session, wait until `ready()` (a float: that many seconds),
    then SIGINT its whole group (a terminal's Ctrl-C, `group`) or the process alone; return
    (exit status, stderr, seconds it took to stop). A process still alive is killed."""
    import os
    import subprocess
    import time

    proc = subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        if isinstance(ready, float | int):
            time.sleep(ready)
        else:
            deadline = time.monotonic() + 240
            while not ready() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert ready(), "what the test waits for never happened"
            time.sleep(0.3)
        begin = time.monotonic()
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        _, errors = proc.communicate(timeout=60)
        return proc.returncode, errors, time.monotonic() - begin
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class TwoGPUs:
    """The fake session's executor as if it had two GPUs: it runs what the sweep hands it in
    process, in order, and stamps part i as run on GPU i % 2."""

    def __init__(self, inner):
        self.inner, self.devices, self.parts, self.cuts_jobs = inner, [0, 1], [], True

    def execute(self, jobs, events, ready=None):
        self.parts += [(j.case.shape_text, [v.name for v in j.variants], list(j.baselines)) for j in jobs]

        class Stamp:
            def started(self, case, name, device):
                events.started(case, name, device)

            def row(self, i, row):
                events.row(i, row.ran_on(i % 2))

            def job_done(self, i, rows):
                events.job_done(i, [r.ran_on(i % 2) for r in rows])

        self.inner.execute(jobs, Stamp(), ready)

    def close(self, graceful=True):
        self.inner.close(graceful)
