"""Where a sweep's jobs run: the `Executor` interface and its three implementations.

    Local(devices)        this host's GPUs, one isolating worker process each (pool.py)
    Cluster(address)      a Dask cluster's GPUs, each through its own worker pool (cluster.py)
    InProcess(device)     this process (profile mode under ncu; tests with the fake backend)

`open_executor(where, timer)` turns one of these records into a running executor; the session
(session.py) is the only caller, so every command and API function gets the same executor for
the same words. An executor runs a list of `CaseJob`s and reports `started`, each `row` and
each `job_done` to the sweep's events (pool.PoolEvents); where a row ran (device, host) is
stamped by the executor, every derived column by the sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cudabench.backends.base import Backend, BackendUnavailable
from cudabench.backends.cupti_clock import KernelClockUnavailable, resolve_timer
from cudabench.core.errors import SweepError
from cudabench.core.records import Case, DeviceInfo, ResultRow
from cudabench.execution.pool import DEFAULT_TIMEOUT_S, PoolError, PoolEvents, WorkerPool
from cudabench.measure.runner import CaseJob, Runner

# Called before job i is dispatched; may block (tune: until nvcc has compiled its configurations).
Ready = Callable[[int], None]


class Executor(Protocol):
    """What the session needs of a place that runs jobs."""

    info: DeviceInfo  # the GPU model every job runs on (one model a run)
    versions: dict[str, str]  # cupy, driver, ... and `timer`: the clock the workers resolved
    devices: list[int]  # one entry a GPU (a Dask worker counts as one)
    notes: list[str]  # what the run should say at its end (a cluster's lost workers)
    # whether the sweep may cut its jobs into parts for several GPUs (parts.py): a pool's
    # and a Dask cluster's (one task a worker in flight: a node that dies takes one part)
    cuts_jobs: bool

    def execute(self, jobs: list[CaseJob], events: PoolEvents, ready: Ready | None = None) -> None:
        """Run every job; each (case, variant) ends as exactly one row, reported to `events`."""

    def close(self, graceful: bool = True) -> None: ...


@dataclass(frozen=True)
class Local:
    """This host's GPUs (`None`: all of them), a worker process each."""

    devices: tuple[int, ...] | None = (0,)
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Cluster:
    """A Dask scheduler's address (or `local`), and the GPU model to use where they differ."""

    address: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    gpu_model: str | None = None


@dataclass(frozen=True)
class InProcess:
    """This process, on one GPU; `profile`: one call a range, nothing timed (under ncu).
    `backend`: an opened backend to use (tests); default the GPU's."""

    device: int = 0
    profile: bool = False
    backend: Backend | None = None


Where = Local | Cluster | InProcess


class InProcessExecutor:
    """This process as an executor: a Runner on one backend, the same events as the pool's."""

    def __init__(self, backend: Backend, device: int, profile: bool = False, timer: str = "events") -> None:
        self.backend, self.device = backend, device
        self.info = backend.device_info()
        self.versions = backend.versions()
        if timer != "events":  # resolved once, here, as a worker does (worker.serve)
            clock, note = resolve_timer(timer, backend.kernel_clock_error())
            self.versions = {**self.versions, "timer": clock, **({"timer_note": note} if note else {})}
        self.devices = [device]
        self.cuts_jobs = True
        self.notes: list[str] = []
        self.runner = Runner(backend, profile=profile)

    def execute(self, jobs: list[CaseJob], events: PoolEvents, ready: Ready | None = None) -> None:
        device = self.device

        class Forward:
            index = 0

            def started(self, case: Case, name: str) -> None:
                events.started(case, name, device)

            def finished(self, row: ResultRow) -> None:
                events.row(self.index, row.ran_on(device))

        forward = Forward()
        self.runner.observer = forward
        for index, job in enumerate(jobs):
            if ready is not None:
                ready(index)
            forward.index = index
            rows = self.runner.run_job(job)
            events.job_done(index, [r.ran_on(device) for r in rows])

    def close(self, graceful: bool = True) -> None:
        pass


def open_executor(where: Where, timer: str = "events", preload: tuple[str, ...] = ()) -> Executor:
    """The running executor for `where`; SweepError (one line) when there is no GPU, CUPTI
    cannot start for the asked clock, or the cluster cannot be used."""
    if isinstance(where, InProcess):
        backend = where.backend
        if backend is None:
            from cudabench.backends import open_backend

            try:
                backend = open_backend(device=where.device)
            except BackendUnavailable as exc:
                raise SweepError(str(exc)) from None
        try:
            return InProcessExecutor(backend, where.device, where.profile, timer)
        except KernelClockUnavailable as exc:
            raise SweepError(str(exc)) from None
    if isinstance(where, Cluster):
        from cudabench.execution.cluster import Cluster as DaskCluster
        from cudabench.execution.cluster_connect import ClusterError

        try:
            return DaskCluster(where.address, where.timeout_s, where.gpu_model, preload)
        except ClusterError as exc:
            raise SweepError(str(exc)) from None
    pool = WorkerPool(
        list(where.devices) if where.devices is not None else None,
        where.timeout_s,
        timer=timer,
        preload=preload,
    )
    try:
        pool.open()
    except PoolError as exc:
        pool.close(graceful=False)
        raise SweepError(str(exc)) from None
    except BaseException:  # Ctrl-C while the workers start: none of them is left running
        pool.close(graceful=False)
        raise
    return pool  # type: ignore[return-value]  # info is set once open() returned
