"""The Dask worker's side of a cluster sweep (cluster.py is the client's): each Dask worker
keeps one cudabench worker pool on its GPU for its life, and runs each task's job on it.

The pool is opened by the run's first call there (`describe`, from the client's survey), with
the libraries the run's jobs need (`preload`: torch, triton) imported by a successor beside
the plain worker, as on one host (successors.py): no GPU of the cluster waits for torch's
import while there are parts without it to run (the client hands those out first). A Dask
worker that was lost and restarted opens its pool again on its first task.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from cudabench.core.records import DeviceInfo, ResultRow
from cudabench.execution.pool import WorkerPool
from cudabench.measure.runner import CaseJob

_POOL: dict[str, WorkerPool] = {}  # this Dask worker's cudabench pool, kept across tasks
_LOCK = threading.Lock()


def _worker_pool(timeout_s: float, preload: tuple[str, ...], bring: bool) -> WorkerPool:
    """This Dask worker's pool of one cudabench worker on its GPU (device 0 of what
    CUDA_VISIBLE_DEVICES shows it), started on first use with `preload`'s successor; one
    kept from an earlier run (a remote cluster's workers outlive runs) brings `preload`
    where `bring` (a task's thread: the one that runs the pool)."""
    with _LOCK:
        pool = _POOL.get("pool")
        if pool is None:
            pool = WorkerPool([0], timeout_s, preload=preload)
            try:
                pool.open()
            except BaseException:  # its successor (started at once) too: none left behind
                pool.close(graceful=False)
                raise
            _POOL["pool"] = pool
        elif bring:
            pool.bring(preload)
        pool.timeout_s = timeout_s
        return pool


def describe(timeout_s: float, preload: tuple[str, ...] = ()) -> tuple[DeviceInfo, dict[str, str], str]:
    """(GPU, versions, host) of the Dask worker it runs on (runs there via client.run, on
    the Dask worker's own thread: it opens the pool where there is none, and changes nothing
    of one a task may be using)."""
    pool = _worker_pool(timeout_s, preload, bring=False)
    assert pool.info is not None
    return pool.info, pool.versions, socket.gethostname()


def run_job(job: CaseJob, timeout_s: float, preload: tuple[str, ...] = ()) -> list[ResultRow]:
    """A Dask task: one job on this worker's GPU, through the isolating pool; its rows."""
    pool = _worker_pool(timeout_s, preload, bring=True)
    rows: list[ResultRow] = []

    class Collect:
        def started(self, case: Any, name: str, device: int) -> None:
            pass

        def row(self, job_index: int, row: ResultRow) -> None:
            pass

        def job_done(self, job_index: int, finished: list[ResultRow]) -> None:
            rows.extend(finished)

    pool.run([job], Collect())
    device = physical_device()
    return [r.ran_on(device) for r in rows] if device else rows


def physical_device() -> int:
    """The host's index of this Dask worker's GPU: the first of CUDA_VISIBLE_DEVICES (which
    dask-cuda sets per worker, e.g. "1,0" for the second GPU), so that a row's (host,
    device) names the GPU it ran on; 0 when the variable is unset or holds UUIDs."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(first) if first.isdigit() else 0
