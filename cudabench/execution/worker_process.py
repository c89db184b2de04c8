"""One worker process of the pool (pool.py): its record, how it is started and killed, and
how its end is told (`describe_exit`); and which GPUs, `--devices`' words (`parse_devices`)
and how many there are before any starts.

A worker is `python -m cudabench.execution.worker` for one GPU, in its own process group (so
that a kill takes whatever it started), talking to the parent over two pipes
(multiprocessing.connection), its stdout and stderr in a temporary file whose tail goes into
the row of a worker that dies.
"""

from __future__ import annotations

import atexit
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import IO

from cudabench.core.errors import SweepError
from cudabench.core.paths import PACKAGE_DIR


@dataclass
class Worker:
    device: int
    proc: subprocess.Popen[bytes]
    inbox: Connection  # worker -> parent
    outbox: Connection  # parent -> worker
    log: IO[bytes]  # its stdout and stderr (a kernel's printf, library warnings)
    job: int | None = None  # the job index it is running
    # "done"s still to come: a job's last row frees the worker for its next job at once (its
    # pipe holds that job while it finishes the last), and the "done" follows (rounds.py)
    owed: int = 0
    current: str | None = None  # the variant under way (no row yet)
    deadline: float | None = None
    dying: bool = False  # it sent a CRASH row and will exit
    # Start-up it has paid: "job" once a job of it has started a row (the first job's set-up
    # allocates on the GPU), and each library baseline once it has returned a row (the first
    # call imports the library and starts its CUDA state: torch, 10 s and more)
    warm: set[str] = field(default_factory=set)
    libraries: set[str] = field(default_factory=set)  # imported: preloaded, or by a job it ran
    since: float = 0.0  # when its job began, or a successor its start (time.monotonic)
    # the CUDA_VISIBLE_DEVICES it was given to see its GPU alone (its GPU count is then 1)
    visible: str | None = None

    def allowance(self, name: str | None, baselines: tuple[str, ...], startup_s: float) -> float:
        """Seconds added to a row's timeout for the start-up it pays: a worker's start-up
        never counts against a row. Kernels under test get none (a planted spinning kernel
        is killed at --timeout), only the first job's set-up and a library's first call."""
        if name is None:
            return 0.0 if "job" in self.warm else startup_s
        return startup_s if name in baselines and name not in self.warm else 0.0

    def tail(self, lines: int = 3) -> str:
        """The last lines it printed, for the row of a worker that died."""
        try:
            self.log.seek(0)
            text = self.log.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""
        kept = [line.strip() for line in text.strip().splitlines() if line.strip()]
        return " | ".join(kept[-lines:])


def spawn(device: int, timer: str, preload: tuple[str, ...] = ()) -> Worker:
    """Start the worker process for `device` (cudabench.execution.worker; it says ready later),
    its output in a temporary file, its channels two pipes. `timer`: the clock it starts;
    `preload`: libraries it imports before it says ready."""
    reap()
    to_worker_r, to_worker_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    log = tempfile.TemporaryFile(prefix=f"cudabench-worker{device}-")
    env = dict(os.environ)
    package_root = str(PACKAGE_DIR.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    shown = alone(device)
    if shown is not None:
        env["CUDA_VISIBLE_DEVICES"] = shown
    command = [
        sys.executable,
        "-m",
        "cudabench.execution.worker",
        "--device",
        str(device if shown is None else 0),
        "--read",
        str(to_worker_r),
        "--write",
        str(to_parent_w),
        "--timer",
        timer,
        *(a for name in preload for a in ("--preload", name)),
    ]
    proc = subprocess.Popen(
        command,
        pass_fds=(to_worker_r, to_parent_w),
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    os.close(to_worker_r)
    os.close(to_parent_w)
    return Worker(
        device,
        proc,
        Connection(to_parent_r, writable=False),
        Connection(to_worker_w, readable=False),
        log,
        libraries=set(preload),
        since=time.monotonic(),
        visible=shown,
    )


def alone(device: int) -> str | None:
    """The CUDA_VISIBLE_DEVICES that shows the worker for `device` its GPU alone (CUDA's
    start then opens that GPU only: on a host of several, workers starting together wait
    on each other in the driver), or None where it cannot be told: another backend, GPUs
    that cannot be counted without a context, an index past them (the worker says so)."""
    counted = visible_gpu_count_list()
    if counted is None or device >= len(counted):
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return _visible_entries(visible)[device] if visible is not None else str(device)


def kill(worker: Worker) -> None:
    """Kill the worker and everything it started (its own process group), wait for its exit
    and close its channels."""
    _kill_group(worker.proc)
    worker.proc.wait()
    _close(worker)


def let_go(worker: Worker, stop: bool) -> None:
    """End the worker without waiting for its exit: `stop` asks it (it is between jobs), else
    its process group is killed. Its channels close now; the process is reaped later
    (`reap`). A process's exit frees its CUDA context in the driver, 0.1 to 0.5 s on an H200
    machine, which the command need not wait for: the pool's close lets its workers go,
    and the results are written and shown meanwhile. (Killed instead at exit if still there.)"""
    if stop:
        try:
            worker.outbox.send(("stop",))
        except OSError:
            stop = False
    if not stop:
        _kill_group(worker.proc)
    _close(worker)
    _leaving.append(worker.proc)


def reap() -> None:
    """Collect the exit of the workers let go that have ended (no waiting)."""
    _leaving[:] = [proc for proc in _leaving if proc.poll() is None]


def _end_leaving() -> None:
    """At exit: kill those let go that are still there (one hung on its way out)."""
    for proc in _leaving:
        if proc.poll() is None:
            _kill_group(proc)


_leaving: list[subprocess.Popen[bytes]] = []
atexit.register(_end_leaving)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _close(worker: Worker) -> None:
    for conn in (worker.inbox, worker.outbox):
        conn.close()
    worker.log.close()


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def parse_devices(text: str) -> tuple[int, ...] | None:
    """`0`, `0,1` or `all` (None: every GPU of the host); SweepError on anything else."""
    if text.strip().lower() == "all":
        return None
    try:
        devices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--devices {text!r}: give GPU indices like 0 or 0,1, or 'all'") from None
    if any(d < 0 for d in devices):
        raise SweepError(f"--devices {text!r}: a GPU index is 0 or more (0, 0,1 or 'all')")
    if not devices or len(set(devices)) != len(devices):
        raise SweepError(f"--devices {text!r}: give distinct GPU indices like 0 or 0,1, or 'all'")
    return tuple(devices)


def visible_gpu_count_list() -> list[int] | None:
    """The indices CUDA will number 0..n-1, counted without a CUDA context: from
    CUDA_VISIBLE_DEVICES when it is set, else from NVML. None when neither can tell (the
    first worker counts them then)."""
    if (os.environ.get("CUDABENCH_BACKEND") or "cupy") != "cupy":
        return None  # the fake backend's GPUs are its own
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        entries = _visible_entries(visible)
        return list(range(len(entries))) if entries else None
    count = nvml_gpu_count()
    return list(range(count)) if count else None


def _visible_entries(visible: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES's entries as CUDA reads them: up to the first that hides the rest
    (a negative index) or names a GPU again (an entry that does not exist, or the same GPU
    by index and by UUID, is left to the workers: pool.open refuses one GPU twice)."""
    entries: list[str] = []
    for entry in (v.strip() for v in visible.split(",")):
        if not entry or entry.startswith("-") or entry in entries:
            break
        entries.append(entry)
    return entries


@functools.cache
def nvml_gpu_count() -> int | None:
    """The host's GPUs by NVML (no CUDA context), once a process; None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None
