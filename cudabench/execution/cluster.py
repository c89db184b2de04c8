"""Sweeps on Dask distributed: the same jobs as on one host, as tasks on a cluster's GPUs.

    cudabench run configs/seeds.yaml --cluster tcp://scheduler:8786
    cudabench run configs/seeds.yaml --cluster local       # a local cluster on this host

Each job (a part of a case, as on one host's GPUs: a variant alone, or its library baselines
together (parts.py); or a round of tune configurations) is a Dask task that asks for the
resource `GPU=1`, so a worker runs one at a time on its GPU (start workers with
`--resources GPU=1`; `dask-cuda-worker` gives each one GPU). In the Dask worker, the task
hands the job to a cudabench worker pool of one GPU (cluster_node.py), kept for the worker's
life, whose successor imports the run's libraries (torch) while the GPU runs the parts that
need none, handed out first: a kernel that crashes or hangs kills that child process, never
the Dask worker, and is a row as on one host. Rows come back as each task ends and are saved
by the sweep as today.
A Dask worker that is lost (a kernel that takes its node down) has its task run again
elsewhere by the scheduler, up to its `distributed.scheduler.allowed-failures` lost workers
(ALLOWED_FAILURES for `--cluster local`; a remote scheduler's own setting otherwise), then
Dask gives up (KilledWorker) and the job's variants run one task each, so that only the
killer's row is lost. Dask's `retries`, which would re-run a task that *raised*, is not
used: a job that raises is ERROR rows at once. Ctrl-C cancels the futures and keeps every
finished row. A cluster left without a worker that can take the run's jobs (every one lost,
and none joining for NO_WORKER_WAIT_S) ends the run: the finished rows stay, the jobs then in
flight are CRASH rows and those never handed out SKIPPED rows, each saying why (exit 1). A
local cluster's nannies restart their lost workers for as long as the run lasts (Dask's
`distributed.deploy.lost-worker-timeout` would otherwise close a nanny whose worker is still
restarting 15 s after it was lost: on a loaded host, every nanny, and the run waited forever).
Kernel sources travel inside the jobs
(the variants' paths must exist on every node: a shared checkout), and each node compiles
with its own nvcc and cache.

cluster_connect.py finds the cluster (the client, the workers' GPUs, the run's GPU model).
`distributed` (and `dask-cuda` for `--cluster local` on GPUs) are the optional extra
`.[cluster]`: nothing here is imported without `--cluster`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

from cudabench.core.records import ResultRow, Status
from cudabench.execution.cluster_connect import connect, fake_worker_count, survey
from cudabench.execution.cluster_node import run_job
from cudabench.execution.pool import PoolEvents
from cudabench.measure.runner import CaseJob, job_failed, libraries_of

# How long a run waits for a worker to join when the cluster has none left that can take its
# jobs, before the jobs still to run become rows saying so; how often it looks.
NO_WORKER_WAIT_S = 60.0
POLL_S = 0.5


def on_cluster(
    client: Any,
    timeout_s: float,
    addresses: list[str],
    pin: bool = False,
    notes: list[str] | None = None,
    preload: tuple[str, ...] = (),
) -> Callable[..., None]:
    """The cluster as a sweep executor: each job a task (resource GPU=1) on the workers at
    `addresses`, rows reported as each task ends, Ctrl-C cancelling what has not finished.

    Tasks are pinned to those addresses only with `pin` (the cluster's GPUs differ and the
    run uses one model's): a worker that dies and is restarted by its nanny comes back at a
    new address, so pinned tasks can never run there, and once every pinned worker is gone
    they would wait forever. Unpinned, the scheduler runs a lost worker's task again on any
    worker (up to its allowed-failures), and gives up on a task that kills worker after worker
    (KilledWorker): its job's variants then go out one task each, so the variant that takes
    the node down is the one CRASH row and the others' rows arrive. A one-row part given up
    on may only have been queued on the workers another part took down (Dask counts their
    deaths against every task assigned there): it runs again at the end, alone in the
    cluster, and is a CRASH row only if it is given up on then. A task that raises is not
    run again: ERROR rows.

    Only as many tasks are in flight as there are workers; the next job goes out when one
    ends, so an idle GPU takes the next job as on one host. Dask places a task with resource
    restrictions on a worker when it is submitted and does not queue it centrally: 16 seeds
    jobs submitted at once were split 8 and 8 between two H200s whatever their lengths, and
    the sweep took 51.8 s where `--devices all` took 40.8 s (2026-11-23). Workers that left
    during the run (their jobs retried by Dask on the others) are added to `notes`."""
    from distributed import KilledWorker, wait

    def execute(jobs: list[CaseJob], events: PoolEvents, ready: Callable[[int], None] | None = None) -> None:
        # (job index, the job or a part of it), popped from the end: first job first, those
        # that need the libraries the workers' successors import (`preload`) last
        pending: list[tuple[int, CaseJob]] = _free_first(jobs, preload)[::-1]
        futures: dict[Any, tuple[int, CaseJob]] = {}  # in flight, in the order handed out
        found: dict[int, list[ResultRow]] = {}  # each job's rows so far
        parts = {i: 1 for i in range(len(jobs))}  # each job's tasks not yet ended
        readied: set[int] = set()
        given_up: list[float] = []  # the seconds waited for a worker, once the run gave up
        # one-row parts Dask gave up on while other tasks ran beside them: a part queued on a
        # worker that another part takes down counts that death too, so each runs again at
        # the end, alone (`alone`: those that did); only one that kills then is a CRASH row
        suspects: list[tuple[int, CaseJob]] = []
        alone: set[tuple[int, tuple[str, ...]]] = set()

        def submit_next() -> None:
            index, job = pending.pop()
            if ready is not None and index not in readied:
                ready(index)
                readied.add(index)
            future = client.submit(
                run_job,
                job,
                timeout_s,
                preload,
                resources={"GPU": 1},
                pure=False,
                workers=addresses if pin else None,
                allow_other_workers=False,
            )
            futures[future] = (index, job)

        def part_done(index: int, rows: list[ResultRow]) -> None:
            for row in rows:
                events.row(index, row)
            found.setdefault(index, []).extend(rows)
            parts[index] -= 1
            if not parts[index]:
                order = {n: i for i, n in enumerate(_names(jobs[index]))}
                events.job_done(index, sorted(found.pop(index), key=lambda r: order.get(r.label, len(order))))

        def ended(future: Any) -> None:
            index, job = futures.pop(future)
            try:
                rows = future.result()
            except KilledWorker as exc:  # the job took down worker after worker
                names = _names(job)
                if len(names) > 1:  # find the one that does: each variant alone
                    parts[index] += len(names) - 1
                    pending.extend((index, _only(job, n)) for n in reversed(names))
                    if notes is not None:
                        notes.append(
                            f"the cluster gave up on the job of {job.case.op} {job.case.id} (KilledWorker: "
                            f"its task took down worker after worker); its {len(names)} variants and "
                            "baselines ran one task each, so that only the one that does is lost"
                        )
                    submit_next()
                    return
                if (index, tuple(names)) not in alone:  # perhaps only beside the one that does
                    suspects.append((index, job))
                    if pending:
                        submit_next()
                    return
                rows = job_failed(
                    job, Status.CRASH, f"the cluster gave up on this job ({type(exc).__name__}: {exc})"
                )
            except Exception as exc:  # the task raised (or was cancelled): a bug, not a lost node; once
                rows = job_failed(job, Status.ERROR, f"the job's task raised {type(exc).__name__}: {exc}")
            if pending:
                submit_next()  # before the rows are saved: the GPU is not kept waiting
            part_done(index, rows)

        def give_up(waited_s: float) -> None:
            """No worker for `waited_s`: the jobs in flight are CRASH rows, the rest SKIPPED."""
            given_up.append(waited_s)
            lost, never = list(futures.values()) + suspects, pending[::-1]
            client.cancel(list(futures))
            futures.clear()
            pending.clear()
            suspects.clear()
            why = f"no worker left in the cluster (none joined in {waited_s:.0f} s)"
            for index, job in lost:
                part_done(index, job_failed(job, Status.CRASH, f"lost with the cluster's last worker: {why}"))
            for index, job in never:
                part_done(index, job_failed(job, Status.SKIPPED, f"not run: {why}"))
            if notes is not None:
                notes.append(
                    f"the run ended early: {why}; {len(lost)} job(s) in flight are CRASH rows and "
                    f"{len(never)} never handed out SKIPPED rows, the finished rows are kept"
                )

        for _ in range(min(max(len(addresses), 1), len(pending))):
            submit_next()
        alone_since: float | None = None  # since when no worker could take the jobs
        try:
            while futures or suspects:
                if not futures and not pending:  # the rest is done: a suspect alone
                    index, job = suspects.pop(0)
                    alone.add((index, tuple(_names(job))))
                    pending.append((index, job))
                    submit_next()
                try:
                    wait(list(futures), timeout=POLL_S, return_when="FIRST_COMPLETED")
                except (TimeoutError, CancelledError):
                    pass
                done = [f for f in futures if f.done()]
                for future in done:
                    ended(future)
                if done or able(client, addresses, pin):
                    alone_since = None
                    continue
                now = time.monotonic()
                alone_since = now if alone_since is None else alone_since
                if now - alone_since >= NO_WORKER_WAIT_S:
                    give_up(now - alone_since)
        except KeyboardInterrupt:
            client.cancel(list(futures))
            raise
        try:
            present = client.scheduler_info()["workers"]
        except OSError:
            present = {}
        left = [a for a in addresses if a not in present]
        if left and notes is not None and not given_up:  # (else its own note says what was lost)
            notes.append(
                f"{len(left)} worker(s) left the cluster during the run "
                f"({', '.join(left)}); Dask ran their unfinished jobs again on the "
                "others (a variant that kept taking workers down is a CRASH row)"
            )

    return execute


def able(client: Any, addresses: list[str], pin: bool) -> int:
    """How many of the cluster's workers can take the run's jobs now: with `pin`, those at
    `addresses`; else any with a GPU resource. 0 when the scheduler does not answer."""
    try:
        present = client.scheduler_info()["workers"]
    except OSError:
        return 0
    if pin:
        return sum(1 for a in addresses if a in present)
    return sum(1 for info in present.values() if (info.get("resources") or {}).get("GPU", 0) >= 1)


def _free_first(jobs: list[CaseJob], preload: tuple[str, ...]) -> list[tuple[int, CaseJob]]:
    """(index, job) in order, the jobs that need none of `preload` first (a stable split):
    while the workers' successors import those libraries, the GPUs run the rest."""

    indexed = list(enumerate(jobs))
    needs = [bool(libraries_of(job) & set(preload)) for job in jobs]
    return [item for item in indexed if not needs[item[0]]] + [item for item in indexed if needs[item[0]]]


def _names(job: CaseJob) -> list[str]:
    """The labels of a job's rows, in order: its variants, then its baselines."""
    return [v.label for v in job.variants] + list(job.baselines)


def _only(job: CaseJob, name: str) -> CaseJob:
    """The job restricted to one variant or baseline (by its label)."""
    return dataclasses.replace(
        job,
        variants=tuple(v for v in job.variants if v.label == name),
        baselines=tuple(b for b in job.baselines if b == name),
    )


class Cluster:
    """A connected cluster as an Executor (executors.py): `info`, `versions`, `devices`,
    `notes`, `execute` and `close`."""

    def __init__(
        self, address: str, timeout_s: float, gpu_model: str | None = None, preload: tuple[str, ...] = ()
    ) -> None:
        self.client = connect(address, fake_worker_count())
        self.preload = preload
        try:
            self.info, self.versions, self.workers = survey(self.client, timeout_s, gpu_model, preload)
            everyone = set(self.client.scheduler_info()["workers"])
        except BaseException:
            self.close()
            raise
        self.devices = list(range(len(self.workers)))  # one "device" a Dask worker
        self.cuts_jobs = True  # a variant a task: the cluster balances as one host's GPUs do
        self.notes: list[str] = []  # what the run should say at its end (workers lost)
        pin = set(self.workers) != everyone  # only some workers have the run's GPU model
        self.execute = on_cluster(self.client, timeout_s, self.workers, pin, self.notes, preload)

    def coming(self) -> tuple[str, ...]:
        """The libraries the workers' successors import (parts.split cuts one worker's jobs
        apart from them; `_free_first` hands out the parts without them first)."""
        return self.preload

    def close(self, graceful: bool = True) -> None:
        cluster = getattr(self.client, "cluster", None)
        self.client.close()
        if cluster is not None:  # ours: --cluster local
            cluster.close()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
