"""Sweeps on Dask distributed: the same jobs as on one host, as tasks on a cluster's GPUs.

    cudabench run configs/seeds.yaml --cluster tcp://scheduler:8786
    cudabench run configs/seeds.yaml --cluster local       # a local cluster on this host

Each job (one case with its variants, or a round of tune configurations) is a Dask task that
asks for the resource `GPU=1`, so a worker runs one at a time on its GPU (start workers with
`--resources GPU=1`; `dask-cuda-worker` gives each one GPU). In the Dask worker, the task
hands the job to a cudabench worker pool of one GPU (pool.py), kept for the worker's life:
a kernel that crashes or hangs kills that child process, never the Dask worker, and is a
row as on one host. Rows come back as each task ends and are saved by the sweep as today.
A Dask worker that is lost has its tasks retried elsewhere (Dask's `retries`); Ctrl-C
cancels the futures and keeps every finished row. Kernel sources travel inside the jobs
(the variants' paths must exist on every node: a shared checkout), and each node compiles
with its own nvcc and cache.

`distributed` (and `dask-cuda` for `--cluster local` on GPUs) are the optional extra
`.[cluster]`: nothing here is imported without `--cluster`.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from typing import Any

from cudabench.pool import PoolEvents, WorkerPool
from cudabench.runner import CaseJob, job_failed
from cudabench.spec import DeviceInfo, ResultRow, Status

CONNECT_TIMEOUT_S = 10
RETRIES = 2  # a job whose Dask worker died runs again elsewhere, twice at most


class ClusterError(RuntimeError):
    """No scheduler, no workers, mixed GPU models, or no `distributed`: one line."""


_POOL: dict[str, Any] = {}  # in a Dask worker process: its cudabench pool, kept across tasks
_LOCK = threading.Lock()


def _worker_pool(timeout_s: float) -> WorkerPool:
    """This Dask worker's pool of one cudabench worker on its GPU (device 0 of what
    CUDA_VISIBLE_DEVICES shows it), started on first use."""
    with _LOCK:
        pool = _POOL.get("pool")
        if pool is None:
            pool = WorkerPool([0], timeout_s)
            pool.open()
            _POOL["pool"] = pool
        pool.timeout_s = timeout_s
        return pool


def describe(timeout_s: float) -> tuple[DeviceInfo, dict[str, str], str]:
    """(GPU, versions, host) of the Dask worker it runs on (runs there via client.run)."""
    import socket

    pool = _worker_pool(timeout_s)
    assert pool.info is not None
    return pool.info, pool.versions, socket.gethostname()


def run_job(job: CaseJob, timeout_s: float) -> list[ResultRow]:
    """A Dask task: one job on this worker's GPU, through the isolating pool; its rows."""
    pool = _worker_pool(timeout_s)
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
    return [dataclasses.replace(r, device=device) for r in rows] if device else rows


def physical_device() -> int:
    """The host's index of this Dask worker's GPU: the first of CUDA_VISIBLE_DEVICES (which
    dask-cuda sets per worker, e.g. "1,0" for the second GPU), so that a row's (host,
    device) names the GPU it ran on; 0 when the variable is unset or holds UUIDs."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def connect(address: str, fake_workers: int | None = None) -> Any:
    """A `distributed.Client` for a scheduler address, or `local`: a LocalCUDACluster (one
    worker per GPU, dask-cuda) or, with the fake backend, a LocalCluster of `fake_workers`
    processes. ClusterError (one line) when it cannot."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError("--cluster needs Dask distributed: pip install -e '.[cluster]'") from None
    try:
        if address == "local":
            if fake_workers is not None:
                cluster = LocalCluster(n_workers=fake_workers, threads_per_worker=1,
                                       processes=True, resources={"GPU": 1},
                                       dashboard_address=None)  # fmt: skip
            else:
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    raise ClusterError("--cluster local on GPUs needs dask-cuda (one worker "
                                       "per GPU): pip install -e '.[cluster]'") from None  # fmt: skip
                cluster = LocalCUDACluster(threads_per_worker=1, resources={"GPU": 1},
                                           dashboard_address=None)  # fmt: skip
            return Client(cluster)
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except ClusterError:
        raise
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"--cluster {address}: no scheduler answered in "
                           f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {exc})") from None  # fmt: skip


def workers(client: Any, timeout_s: float) -> list[tuple[str, str, DeviceInfo]]:
    """(Dask worker address, host, GPU) of each worker, each one's cudabench pool started."""
    found = client.run(describe, timeout_s)
    return sorted((address, host, info) for address, (info, _, host) in found.items())


def survey(client: Any, timeout_s: float, gpu_model: str | None = None,
           ) -> tuple[DeviceInfo, dict[str, str], list[str]]:  # fmt: skip
    """The GPU model the run uses, its versions, and the addresses of the workers that have
    it. ClusterError if there are no workers, if their GPUs differ and `gpu_model` (a part of
    the model's name, any case) does not pick one, or if it matches none."""
    found = client.run(describe, timeout_s)
    if not found:
        raise ClusterError("the cluster has no workers")
    models = sorted({info.name for info, _, _ in found.values()})
    if gpu_model is not None:
        chosen = [m for m in models if gpu_model.lower() in m.lower()]
        if len(chosen) != 1:
            raise ClusterError(f"--gpu-model {gpu_model!r} matches {len(chosen)} of the "
                               f"cluster's GPU models ({', '.join(models)})")  # fmt: skip
    elif len(models) > 1:
        raise ClusterError(f"the cluster's GPUs differ ({', '.join(models)}): one run needs one "
                           "GPU model; pick one with --gpu-model")  # fmt: skip
    else:
        chosen = models
    addresses = sorted(a for a, (info, _, _) in found.items() if info.name == chosen[0])
    info, versions, _ = found[addresses[0]]
    return info, versions, addresses


def on_cluster(client: Any, timeout_s: float, addresses: list[str], pin: bool = False,
               notes: list[str] | None = None) -> Callable[..., None]:  # fmt: skip
    """The cluster as a sweep executor: each job a task (resource GPU=1) on the workers at
    `addresses`, rows reported as each task ends, Ctrl-C cancelling what has not finished.

    Tasks are pinned to those addresses only with `pin` (the cluster's GPUs differ and the
    run uses one model's): a worker that dies and is restarted by its nanny comes back at a
    new address, so pinned tasks can never run there, and once every pinned worker is gone
    they would wait forever. Unpinned, Dask retries a lost worker's task on any worker, and
    gives up on a task that kills worker after worker (KilledWorker): its job becomes CRASH
    rows and the run goes on.

    Only as many tasks are in flight as there are workers; the next job goes out when one
    ends, so an idle GPU takes the next job as on one host. Dask places a task with resource
    restrictions on a worker when it is submitted and does not queue it centrally: 16 seeds
    jobs submitted at once were split 8 and 8 between two H200s whatever their lengths, and
    the sweep took 51.8 s where `--devices all` took 40.8 s (2026-11-23). Workers that left
    during the run (their jobs retried by Dask on the others) are added to `notes`."""
    from distributed import as_completed

    def execute(jobs: list[CaseJob], events: PoolEvents,
                ready: Callable[[int], None] | None = None) -> None:  # fmt: skip
        pending = list(range(len(jobs)))[::-1]  # popped from the end: first job first
        futures: dict[Any, int] = {}
        running = as_completed()

        def submit_next() -> None:
            index = pending.pop()
            if ready is not None:
                ready(index)
            future = client.submit(run_job, jobs[index], timeout_s, resources={"GPU": 1},
                                    retries=RETRIES, pure=False,
                                    workers=addresses if pin else None,
                                    allow_other_workers=False)  # fmt: skip
            futures[future] = index
            running.add(future)

        for _ in range(min(max(len(addresses), 1), len(pending))):
            submit_next()
        try:
            for future in running:
                index = futures[future]
                try:
                    rows = future.result()
                except Exception as exc:  # Dask gave up: the job's workers kept dying
                    rows = job_failed(jobs[index], Status.CRASH,
                                      f"the cluster gave up on this job ({type(exc).__name__}: "
                                      f"{exc})")  # fmt: skip
                if pending:
                    submit_next()  # before the rows are saved: the GPU is not kept waiting
                for row in rows:
                    events.row(index, row)
                events.job_done(index, rows)
        except KeyboardInterrupt:
            client.cancel(list(futures))
            raise
        present = client.scheduler_info()["workers"]
        left = [a for a in addresses if a not in present]
        if left and notes is not None:
            notes.append(f"{len(left)} worker(s) left the cluster during the run "
                         f"({', '.join(left)}); Dask ran their unfinished jobs again on the "
                         "others (a job it gave up on is CRASH rows)")  # fmt: skip

    return execute


def fake_worker_count() -> int | None:
    """With the fake backend: how many local workers (CUDABENCH_FAKE_DEVICES, default 2)."""
    if os.environ.get("CUDABENCH_BACKEND") != "fake":
        return None
    return int(os.environ.get("CUDABENCH_FAKE_DEVICES", "2") or 2)


class Cluster:
    """A connected cluster as an Executor (executors.py): `info`, `versions`, `devices`,
    `notes`, `execute` and `close`."""

    def __init__(self, address: str, timeout_s: float, gpu_model: str | None = None) -> None:
        self.client = connect(address, fake_worker_count())
        try:
            self.info, self.versions, self.workers = survey(self.client, timeout_s, gpu_model)
            everyone = set(self.client.scheduler_info()["workers"])
        except BaseException:
            self.close()
            raise
        self.devices = list(range(len(self.workers)))  # one "device" a Dask worker
        self.notes: list[str] = []  # what the run should say at its end (workers lost)
        pin = set(self.workers) != everyone  # only some workers have the run's GPU model
        self.execute = on_cluster(self.client, timeout_s, self.workers, pin, self.notes)

    def close(self, graceful: bool = True) -> None:
        cluster = getattr(self.client, "cluster", None)
        self.client.close()
        if cluster is not None:  # ours: --cluster local
            cluster.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
