"""Worker processes for a sweep: one per GPU, each taking jobs (one case each) from one queue.

A kernel that crashes, hangs or breaks its process never takes the sweep down:

- CRASH: the worker sends the row and exits (its CUDA context is unusable); a worker that dies
  without a word (a segfault, os._exit) gets a CRASH row for the variant it was running, with
  the tail of its output.
- TIMEOUT: a variant that runs longer than `timeout_s` (from its "started" message) has its
  worker killed with its whole process group.
- ERROR: a worker that sends something that is not a message (garbage on the channel).

In each case the worker is replaced and the rest of the job (the variants without a row)
goes to the front of the queue. Workers are reused across jobs until one fails, so start-up
(Python, CuPy, a CUDA context: about a second) is paid once per GPU, not per case.

The libraries the jobs import (`preload`: torch, about 4.5 s, for torch baselines and Triton
variants) never hold a GPU up: beside each GPU's plain worker, which starts on the jobs that
need nothing at once, a successor imports them and takes that GPU over once it is ready and
the plain worker is between jobs (successors.py). Which queued job an idle worker takes is
dispatch.py's choice: a job that needs a library waits for a worker that has it, or for its
own GPU's successor. A worker process itself (started, killed, its exit told) is
worker_process.py's.
"""

from __future__ import annotations

import collections
import dataclasses
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any, Protocol

from cudabench.core.records import Case, DeviceInfo, ResultRow, Status
from cudabench.execution import dispatch, early
from cudabench.execution.successors import Successors
from cudabench.execution.worker_process import Worker, describe_exit, kill, spawn, visible_gpu_count_list
from cudabench.measure.runner import CaseJob

DEFAULT_TIMEOUT_S = 300.0
HOST = socket.gethostname()
STARTUP_TIMEOUT_S = 180.0  # Python, CuPy and a CUDA context, on a busy machine
POLL_S = 0.25  # how often the loop looks at deadlines (and lets Ctrl-C in)
DONE_WAIT_S = 5.0  # at a run's end, for a worker's "done" after its last row


class PoolError(RuntimeError):
    """A worker could not be started (no GPU, or GPUs that differ); one line for the user."""


class PoolEvents(Protocol):
    """What the pool tells its caller (the CLI draws progress and saves rows with these)."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def row(self, job_index: int, row: ResultRow) -> None: ...

    def job_done(self, job_index: int, rows: list[ResultRow]) -> None: ...


@dataclass
class _JobState:
    job: CaseJob
    names: list[str]
    rows: dict[str, ResultRow] = field(default_factory=dict)

    @property
    def remaining(self) -> list[str]:
        return [n for n in self.names if n not in self.rows]


def _job_names(job: CaseJob) -> list[str]:
    return [v.label for v in job.variants] + list(job.baselines)


def _rest_of(job: CaseJob, names: Iterable[str]) -> CaseJob:
    """The same job restricted to `names` (in the job's order)."""
    keep = set(names)
    return dataclasses.replace(
        job,
        variants=tuple(v for v in job.variants if v.label in keep),
        baselines=tuple(b for b in job.baselines if b in keep),
    )


def _needs(job: CaseJob) -> set[str]:
    """The libraries a job imports (its baselines', its Python variants' `needs=`); none
    where its op does not load here (the worker's rows say why: a Dask node runs the pool
    with the parent's op file path)."""
    try:
        return set(job.libraries())
    except Exception:  # the job's rows carry the op's error, from the worker
        return set()


class WorkerPool:
    """Start with `open()`, run jobs with `run()`, and always `close()` (a context manager)."""

    def __init__(
        self,
        devices: list[int] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        startup_s: float = STARTUP_TIMEOUT_S,
        timer: str = "events",
        preload: tuple[str, ...] = (),
    ) -> None:
        self.requested = devices  # None: every GPU of the host
        self.timeout_s, self.startup_s = timeout_s, startup_s
        self.timer = timer  # the clock asked for: workers start CUPTI once unless events
        self.workers: dict[int, Worker] = {}  # device -> its worker
        # the workers importing `preload` beside the GPUs' plain workers, to take them over
        self.successors = Successors(timer, preload, startup_s)
        self.info: DeviceInfo | None = None
        self.versions: dict[str, str] = {}
        self.devices: list[int] = []
        self.cuts_jobs = True  # a worker killed takes only its own job (the rest run again)
        self.started_workers = 0  # for tests: replacements show here
        self.notes: list[str] = []  # nothing to add at a run's end (the Executor interface)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(graceful=exc_type is None)  # Ctrl-C or an error: kill them now

    # ------------------------------------------------------------------ workers

    def open(self) -> DeviceInfo:
        """Start one worker per device, in parallel, and (with `preload`) each device's
        successor. With `all`, the GPUs are counted here (CUDA_VISIBLE_DEVICES, else NVML)
        so that every worker starts at once; failing that, the first worker tells how many
        there are. Returns once the plain workers are ready; the successors come later."""
        requested = self.requested or visible_gpu_count_list()
        if requested:
            self.devices = list(requested)
            spawned = [self._spawn(d) for d in self.devices]
            self.started_workers += self.successors.spawn(self.devices)
            counts = [self._await_ready(worker) for worker in spawned]
        else:
            counts = [self._await_ready(self._spawn(0))]
            self.devices = list(range(counts[0]))
            spawned = [self._spawn(d) for d in self.devices[1:]]
            self.started_workers += self.successors.spawn(self.devices)
            counts += [self._await_ready(w) for w in spawned]
        early.discard()  # any started early for other devices or another clock
        for device in self.devices:
            if device >= min(counts):
                raise PoolError(f"GPU {device} does not exist (this machine has {min(counts)})")
        assert self.info is not None
        return self.info

    def _start(self, device: int) -> int:
        """Start the worker for `device` and wait for it to say ready; returns the GPU count."""
        return self._await_ready(self._spawn(device))

    def _spawn(self, device: int) -> Worker:
        """Start the plain worker process for `device` (it says ready later), or take the one
        started for it before the command loaded (early.py)."""
        worker = early.take(device, self.timer) or spawn(device, self.timer)
        self.started_workers += 1
        self.workers[device] = worker  # registered now, so that close() kills it whatever happens
        return worker

    def _await_ready(self, worker: Worker) -> int:
        """Wait for the worker's hello; returns the GPU count it sees. PoolError if none."""
        device, proc = worker.device, worker.proc
        if not worker.inbox.poll(self.startup_s):
            self._kill(worker)
            raise PoolError(
                f"the worker for GPU {device} did not start in {self.startup_s:.0f} s"
                f" ({worker.tail() or 'no output'})"
            )
        try:
            message = worker.inbox.recv()
        except Exception:
            self._kill(worker)
            raise PoolError(
                f"the worker for GPU {device} failed to start: {worker.tail() or describe_exit(proc.poll())}"
            ) from None
        if message[0] == "unavailable":
            self._kill(worker)
            raise PoolError(message[1])
        _, info, versions, count = message
        if self.info is None:
            self.info, self.versions = info, versions
        elif info.name != self.info.name:
            self._kill(worker)
            raise PoolError(
                f"GPU {device} is a {info.name}, GPU {self.devices[0]} a "
                f"{self.info.name}: one run needs identical GPUs"
            )
        return int(count)

    def _kill(self, worker: Worker) -> None:
        """Kill the worker (worker_process.kill) and forget it."""
        kill(worker)
        if self.workers.get(worker.device) is worker:
            del self.workers[worker.device]

    def _successions(self) -> None:
        """Each ready successor takes its GPU over where the worker there is idle (or gone):
        that worker is stopped. (A fresh worker that replaces a killed one gets no successor:
        it imports a library if it runs a job that needs one.)"""
        self.successors.listen(self.info.name if self.info else None)
        for device in list(self.successors.ready):
            current = self.workers.get(device)
            if current is not None and current.job is not None:
                continue
            if current is not None:
                self._kill(current)  # idle: nothing of it runs on the GPU
            self.workers[device] = self.successors.take(device)

    def close(self, graceful: bool = True) -> None:
        """Ask the workers to stop (graceful), then kill what is left."""
        if graceful:
            for worker in list(self.workers.values()):
                try:
                    worker.outbox.send(("stop",))
                except OSError:
                    pass
            deadline = time.monotonic() + 5.0
            for worker in list(self.workers.values()):
                try:
                    worker.proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for worker in list(self.workers.values()):
            self._kill(worker)
        self.successors.close()

    def coming(self) -> tuple[str, ...]:
        """The libraries successors are still bringing (parts.split cuts one GPU's jobs apart
        from them), or none."""
        return self.successors.bringing()

    def await_successors(self, libraries: tuple[str, ...]) -> float:
        """Between runs: wait until a GPU's worker has `libraries` (its successor ready and in
        charge), or no successor is left to bring them; returns the seconds waited. Tune's
        final round calls it: it runs on one GPU, with the library rows, and the wait is said
        apart. The other successors go on importing and take over later."""
        begin = time.monotonic()
        wanted = set(libraries)
        while not any(wanted <= w.libraries for w in self.workers.values()) and self.successors.coming:
            self.successors.listen(self.info.name if self.info else None, POLL_S)
            self._successions()
        return time.monotonic() - begin

    # ------------------------------------------------------------------ the sweep

    def execute(
        self, jobs: list[CaseJob], events: PoolEvents, ready: Callable[[int], None] | None = None
    ) -> None:
        """The Executor interface (executors.py): `run`."""
        self.run(jobs, events, ready)

    def run(
        self, jobs: list[CaseJob], events: PoolEvents, ready: Callable[[int], None] | None = None
    ) -> None:
        """Run every job; each (case, variant) ends as exactly one row, reported to `events`.
        `ready(i)`, if given, is called (and may block) before job i first goes to a worker."""
        states = {i: _JobState(job, _job_names(job)) for i, job in enumerate(jobs)}
        unfinished = {i for i, state in states.items() if state.names}
        for i in sorted(set(states) - unfinished):  # a case with nothing to run
            events.job_done(i, [])
        queue = collections.deque((i, states[i].job) for i in sorted(unfinished))
        readied: set[int] = set()
        needs = {i: _needs(job) for i, job in enumerate(jobs)}

        def take(worker: Worker) -> tuple[int, CaseJob] | None:
            """The queued job the worker takes (dispatch.choose), or None: it waits."""
            now = time.monotonic()
            queued = [dispatch.Queued(i, frozenset(needs[i]), job.estimate_s) for i, job in queue]
            others = [self._as_other(w, states, now) for w in self.workers.values() if w is not worker]
            coming = self.successors.libraries(worker.device)
            chosen = dispatch.choose(queued, worker.libraries, others, self.successors.import_s, coming)
            if chosen is None:
                return None
            item = next(item for item in queue if item[0] == chosen.index)
            queue.remove(item)
            worker.libraries |= needs[item[0]]  # it will have imported them
            return item

        def record(worker: Worker, row: ResultRow) -> None:
            state = states[worker.job]  # type: ignore[index]
            row = row.ran_on(worker.device, HOST)
            state.rows[row.label] = row
            if worker.current == row.label:
                worker.current = None
            events.row(worker.job, row)  # type: ignore[arg-type]
            if not state.remaining:
                rows = [state.rows[n] for n in state.names]
                unfinished.discard(worker.job)
                events.job_done(worker.job, rows)  # type: ignore[arg-type]

        def fail(worker: Worker, status: Status, error: str, blame: bool = True) -> None:
            """End the worker: (blame) a row for the variant it was on, the rest of its job
            requeued; the loop starts a fresh worker in its place."""
            job_index = worker.job
            if job_index is not None:
                state = states[job_index]
                name = worker.current or (state.remaining[0] if state.remaining else None)
                if blame and name is not None and name not in state.rows:
                    record(
                        worker,
                        ResultRow.of(
                            state.job.case, name, status, error, is_baseline=name in state.job.baselines
                        ),
                    )
                if state.remaining:
                    queue.appendleft((job_index, _rest_of(state.job, state.remaining)))
            self._kill(worker)

        while unfinished:
            self._successions()
            for device in self.devices:  # a fresh worker where one was killed
                if device not in self.workers and queue:
                    self._start(device)
            gone = False  # a worker found dead as it was handed a job: start over
            for worker in list(self.workers.values()):  # idle workers take the next job
                taken = take(worker) if worker.job is None and queue else None
                if taken is not None:
                    index, job = taken
                    if ready is not None and index not in readied:
                        ready(index)
                        readied.add(index)
                    worker.job, worker.current, worker.dying = index, None, False
                    worker.since = time.monotonic()
                    worker.deadline = (
                        worker.since + self.timeout_s + worker.allowance(None, job.baselines, self.startup_s)
                    )
                    try:
                        worker.outbox.send(("job", index, job))
                    except OSError:  # it died while idle (a successor killed as it waited):
                        fail(worker, Status.CRASH, "", blame=False)  # the job goes back, no row
                        gone = True
            if gone:
                continue
            busy = [w for w in self.workers.values() if w.job is not None]
            coming = list(self.successors.coming.values())  # heard at the loop's top
            if not busy and not coming:  # cannot happen: every failure records a row or requeues
                raise RuntimeError(f"jobs {sorted(unfinished)} lost")
            now = time.monotonic()
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            starting = self.successors.next_deadline()
            nearest = min([*deadlines, *([starting] if starting else [])], default=now + POLL_S)
            inboxes = [w.inbox for w in [*busy, *coming]]
            answered = wait(inboxes, timeout=max(0.0, min(POLL_S, nearest - now)))
            for worker in busy:
                if worker.inbox in answered:
                    self._receive(worker, record, fail, events, states)
            now = time.monotonic()
            for worker in [w for w in self.workers.values() if w.job is not None]:
                if worker.deadline is not None and now > worker.deadline:
                    timed_out = f"no result in {self.timeout_s:g} s (--timeout); worker killed"
                    fail(worker, Status.TIMEOUT, timed_out)
        # the last jobs' "done" (it follows their last row): every worker idle before the next
        # run, whose first job may need the worker that has its libraries (tune's final round)
        for worker in [w for w in self.workers.values() if w.job is not None]:
            if wait([worker.inbox], timeout=DONE_WAIT_S):
                self._receive(worker, record, fail, events, states)

    def _as_other(self, worker: Worker, states: dict[int, _JobState], now: float) -> dispatch.Other:
        """A GPU as dispatch.choose sees it: the libraries of its worker and of its successor,
        idle or not, its work left (its job's, or the successor's import where that is
        longer)."""
        bringing = self.successors.libraries(worker.device)
        libraries = frozenset(worker.libraries | bringing)
        if worker.job is None:
            left: float | None = 0.0
        else:
            estimate = states[worker.job].job.estimate_s
            left = None if estimate is None else max(0.0, estimate - (now - worker.since))
        importing = self.successors.left_s(worker.device, now)
        if importing is not None:
            left = None if left is None else max(left, importing)
        idle = worker.job is None and not bringing
        return dispatch.Other(libraries, idle, left)

    def _receive(
        self, worker: Worker, record: Any, fail: Any, events: PoolEvents, states: dict[int, _JobState]
    ) -> None:
        try:
            message = worker.inbox.recv()
        except (EOFError, OSError):  # it died
            if worker.dying:  # after its CRASH row, as it should
                fail(worker, Status.CRASH, "", blame=False)
                return
            worker.proc.wait()
            output = worker.tail()
            fail(
                worker,
                Status.CRASH,
                f"worker died ({describe_exit(worker.proc.returncode)})" + (f": {output}" if output else ""),
            )
            return
        except Exception as exc:  # not a pickle: garbage on the channel
            fail(worker, Status.ERROR, f"worker sent garbage ({type(exc).__name__}: {exc})")
            return
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "started" and len(message) == 3 and message[1] == worker.job:
            worker.current = message[2]
            job = states[message[1]].job  # message[1] is worker.job
            worker.deadline = (
                time.monotonic()
                + self.timeout_s
                + worker.allowance(message[2], job.baselines, self.startup_s)
            )
            worker.warm.add("job")
            events.started(job.case, message[2], worker.device)
        elif kind == "row" and len(message) == 3 and isinstance(message[2], ResultRow):
            row = message[2]
            worker.warm.add(row.label)  # its library, if a baseline, is loaded now
            record(worker, row)
            if row.status is Status.CRASH:
                worker.dying = True
        elif kind == "done" and len(message) == 2:
            worker.job, worker.current, worker.deadline = None, None, None
        else:
            fail(worker, Status.ERROR, f"worker sent garbage ({str(message)[:80]!r})")
