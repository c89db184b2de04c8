"""The worker process: runs jobs on one GPU for the parent (pool.py), over a pipe.

    python -m cudabench.execution.worker --device N --read FD --write FD [--timer auto|cupti|both]
                                         [--preload torch]

Messages are pickled tuples on `multiprocessing.connection` channels (not stdout: a kernel's
printf or a library's warning must not corrupt them):

    worker -> parent  ("ready", DeviceInfo, versions, device_count)   once, at start
                      ("unavailable", message)                        no GPU (or no CUPTI
                                                                      for --timer cupti):
                                                                      then it exits
                      ("started", job_id, name)                       a variant begins
                      ("row", job_id, ResultRow)                      a variant ends
                      ("done", job_id)                                the job is finished
    parent -> worker  ("job", job_id, CaseJob) | ("stop",)
                      ("after", pid)      a successor taking its GPU over: the worker
                                          there was killed; run nothing until it has exited

A CUDA error leaves the process's context unusable (and CuPy may still exit 0), so after a
CRASH row the worker says so by sending that row, then exits with CONTEXT_LOST: the parent
starts a fresh worker for the rest of the job.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from cudabench.backends import backend_name
from cudabench.backends.driver import open_context_early
from cudabench.core.records import Case, ResultRow, Status

CONTEXT_LOST = 3  # exit status after a CRASH row


class _ContextLost(Exception):
    """Raised from the observer after a CRASH row: nothing more can run in this process."""


class _Reporter:
    """Runner observer that sends progress and rows to the parent as they happen."""

    def __init__(self, channel: Connection, job_id: int, device: int) -> None:
        self.channel, self.job_id, self.device = channel, job_id, device

    def started(self, case: Case, name: str) -> None:
        self.channel.send(("started", self.job_id, name))

    def finished(self, row: ResultRow) -> None:
        self.channel.send(("row", self.job_id, row))  # the pool stamps where it ran
        if row.status is Status.CRASH:
            raise _ContextLost(row.error)


def serve(
    device: int,
    inbox: Connection,
    outbox: Connection,
    timer: str = "events",
    preload: tuple[str, ...] = (),
) -> int:
    """Open the backend, say ready, then run jobs until told to stop. Returns the exit status.
    With a `timer` other than events, CUPTI is started once first: the clock the jobs will
    get goes back in the versions (`timer`, and `timer_note` when auto fell back). The
    `preload` libraries (the baselines' and Python variants': torch, triton) are imported
    first, before the backend opens, and their CUDA state started before saying ready: in
    the first row that calls one, the import would be part of the run's time. (Such a worker
    is the pool's successor on its GPU: it takes over from the plain worker there, which runs
    the jobs that need nothing meanwhile.)"""
    from cudabench.backends import open_backend
    from cudabench.backends.base import BackendUnavailable
    from cudabench.backends.cupti_clock import KernelClockUnavailable, resolve_timer
    from cudabench.measure.runner import Runner

    for library in preload:  # first: after torch, CuPy's import and context come sooner
        _imported(library)  # (H200: 3.7 to 4.5 s to ready this way, 4.0 to 5.8 s CuPy first)
    try:
        backend = open_backend(device=device)
        if hasattr(backend, "channel"):  # the seam the worker owns: the fake backend's planted
            backend.channel = outbox  # garbage fault writes on this worker's channel
        info = backend.device_info()
        versions = backend.versions()
        if timer != "events":
            clock, note = resolve_timer(timer, backend.kernel_clock_error())
            versions = {**versions, "timer": clock, **({"timer_note": note} if note else {})}
    except (BackendUnavailable, KernelClockUnavailable) as exc:
        outbox.send(("unavailable", str(exc)))
        return 2
    for library in preload:
        _preload(library, device)
    outbox.send(("ready", info, versions, backend.device_count()))
    runner = Runner(backend)
    while True:
        try:
            message: Any = inbox.recv()
        except EOFError:  # the parent went away
            return 0
        if message[0] == "stop":
            return 0
        if message[0] == "after":  # the GPU's last worker, killed as this one took over
            _await_exit(message[1])
            continue
        _, job_id, job = message
        runner.observer = _Reporter(outbox, job_id, device)
        try:
            runner.run_job(job)
        except _ContextLost:
            return CONTEXT_LOST
        outbox.send(("done", job_id))


def _await_exit(pid: int) -> None:
    """Wait until process `pid` has exited (its CUDA context freed by the driver), as the
    parent's wait did before it handed the GPU over: Linux's pidfd turns readable at its
    exit; where pidfd is refused (an older container's seccomp, a sandbox), /proc says when
    it is gone or a zombie. A process that never ends is the job's timeout's to catch."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:  # gone already
        return
    except (OSError, AttributeError):
        _await_exit_by_proc(pid)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll()
    finally:
        os.close(fd)


def _await_exit_by_proc(pid: int) -> None:
    stat = f"/proc/{pid}/stat"
    while True:
        try:
            with open(stat) as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):  # gone (or no /proc: nothing to wait with)
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.005)


def _imported(library: str) -> None:
    """Import a library the jobs need, no more (its CUDA state starts in `_preload`, once
    the backend is open); a failure is left to the rows that call it."""
    try:
        importlib.import_module(library)
    except Exception:
        pass


def _preload(library: str, device: int) -> None:
    """Import a library the jobs need (a baseline's, a Python variant's) ahead; a failure is
    left to the rows that call it."""
    from cudabench.ops import torch_baselines

    if library == "torch":
        torch_baselines.warm(device)
        return
    try:
        importlib.import_module(library)
        if library == "triton":  # Triton's own start, 0.55 s a process (ops/triton_warm.py)
            from cudabench.ops import triton_warm

            triton_warm.warm(device)
    except Exception:  # the rows that call it say why
        pass


def _die_with_parent() -> None:
    """Linux: be killed when the parent dies (even by SIGKILL), so that no worker is left
    spinning on a GPU after the tool is gone. Best effort elsewhere: EOF on the pipe ends an
    idle worker anyway."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent is already gone
            os._exit(0)
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    _die_with_parent()
    parser = argparse.ArgumentParser(description="cudabench worker (started by cudabench run)")
    parser.add_argument("--device", type=int, required=True)
    parser.add_argument("--read", type=int, required=True, help="fd of the parent's channel")
    parser.add_argument("--write", type=int, required=True, help="fd of the channel back")
    parser.add_argument("--timer", default="events", help="start CUPTI once for this clock")
    parser.add_argument("--preload", action="append", default=[], help="a library to import before ready")
    args = parser.parse_args(argv)
    if backend_name() == "cupy":  # CUDA starts in a thread while serve imports CuPy
        open_context_early(args.device)
    inbox = Connection(args.read, writable=False)
    outbox = Connection(args.write, readable=False)
    status = serve(args.device, inbox, outbox, args.timer, tuple(args.preload))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # skip CuPy's teardown: a dead context can fail or hang in it


if __name__ == "__main__":
    from cudabench.execution.worker import main as _main

    _main()
