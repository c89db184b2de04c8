"""One round of jobs on the pool's workers (pool.py): the queue, who takes what, the messages
back, and what a worker's failure leaves.

Each idle worker takes a queued job (dispatch.choose: a job that needs a library waits for a
worker that has it, or for its GPU's successor) and sends back, per variant, "started" and
then its row, and "done" at the end (worker.py). Every (case, variant) ends as exactly one
row, reported to the caller's `PoolEvents`:

- a worker that dies, hangs past its deadline or sends garbage gets a row for the variant it
  was on (CRASH, TIMEOUT, ERROR) and is killed; the rest of its job goes back to the front of
  the queue, and the pool starts a fresh worker in its place;
- a job's last row frees its worker at once: the next job goes down its pipe while it sends
  "done" (owed until it comes, within `--timeout`, or the worker is killed), so a GPU does not
  wait for the parent between jobs; a job too big for the pipe's room waits for the "done";
- the caller's events (the results files rewritten, the history database: 7 ms a row, 16 ms
  more at a job's end on the H200 machines) are told after the idle workers have their next
  jobs, in the order they happened.
"""

from __future__ import annotations

import collections
import dataclasses
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Protocol

from cudabench.core.records import Case, ResultRow, Status
from cudabench.execution import dispatch
from cudabench.execution.worker_process import Worker, describe_exit
from cudabench.measure.runner import CaseJob, libraries_of

if TYPE_CHECKING:
    from cudabench.execution.successors import Successors

HOST = socket.gethostname()  # each row stamped with where it ran
POLL_S = 0.25  # how often the loop looks at deadlines (and lets Ctrl-C in)
DONE_WAIT_S = 5.0  # at a round's end, for a worker's "done" after its last row
# the bytes a job's message may have to go down the pipe of a worker still finishing its last
# job (Linux's pipes hold 64 KiB; a job of a few variants is 1 to 5 KiB)
PIPE_ROOM = 32 * 1024
# more time before the first "started" of a job that carries verify's warm-up (its shapes'
# checks come first, and on a fresh machine CuPy compiles their kernels: up to 4.2 s a shape
# on an H200, 8 shapes a job): its --timeout is for the variant's own check
WARM_UP_S = 60.0
# the note of the TIMEOUT row of a job killed in its warm-up, before its variant ran: the
# variant is not to blame (verification/warm.py checks the shape again without the warm-up)
WARM_UP_TIMEOUT_NOTE = "verify: killed in the warm-up, before the variant ran"


class PoolEvents(Protocol):
    """What the pool tells its caller (the CLI draws progress and saves rows with these)."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def row(self, job_index: int, row: ResultRow) -> None: ...

    def job_done(self, job_index: int, rows: list[ResultRow]) -> None: ...


class Crew(Protocol):
    """The workers a round runs on (pool.WorkerPool)."""

    workers: dict[int, Worker]  # device -> its worker
    devices: list[int]
    successors: Successors
    timeout_s: float
    startup_s: float

    def take_over(self) -> None:
        """Each ready successor takes its GPU over where that GPU's worker is idle."""

    def start(self, device: int) -> int:
        """A fresh worker for `device`, ready."""

    def kill(self, worker: Worker) -> None:
        """Kill the worker and forget it."""


class _Told:
    """The caller's events held back until the idle workers have their next jobs, then told
    in the order they happened (`flush`)."""

    def __init__(self, events: PoolEvents) -> None:
        self.events = events
        self.calls: list[Callable[[], None]] = []

    def started(self, case: Case, name: str, device: int) -> None:
        self.calls.append(lambda: self.events.started(case, name, device))

    def row(self, job_index: int, row: ResultRow) -> None:
        self.calls.append(lambda: self.events.row(job_index, row))

    def job_done(self, job_index: int, rows: list[ResultRow]) -> None:
        self.calls.append(lambda: self.events.job_done(job_index, rows))

    def flush(self) -> None:
        while self.calls:
            self.calls.pop(0)()


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


class Round:
    """Every job run on `crew`'s workers, each (case, variant) ending as one row told to
    `events`; `ready(i)`, if given, is called (and may block) before job i first goes out."""

    def __init__(
        self,
        crew: Crew,
        jobs: list[CaseJob],
        events: PoolEvents,
        ready: Callable[[int], None] | None = None,
    ) -> None:
        self.crew, self.ready = crew, ready
        self.told = _Told(events)
        self.states = {i: _JobState(job, _job_names(job)) for i, job in enumerate(jobs)}
        self.unfinished = {i for i, state in self.states.items() if state.names}
        for i in sorted(set(self.states) - self.unfinished):  # a case with nothing to run
            events.job_done(i, [])
        self.queue = collections.deque((i, self.states[i].job) for i in sorted(self.unfinished))
        self.readied: set[int] = set()
        self.needs = {i: libraries_of(job) for i, job in enumerate(jobs)}

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self.told.flush()  # what was heard reaches the caller, however the round ends

    def _loop(self) -> None:
        crew = self.crew
        while self.unfinished:
            crew.take_over()
            for device in crew.devices:  # a fresh worker where one was killed
                if device not in crew.workers and self.queue:
                    self.told.flush()  # its start takes seconds: the rows heard are told first
                    crew.start(device)
            gone = False  # a worker found dead as it was handed a job: start over
            for worker in list(crew.workers.values()):  # idle workers take the next job
                if worker.job is None and self.queue:
                    gone = not self._give(worker) or gone
            self.told.flush()
            if gone:
                continue
            # those on a job, and those whose "done" is owed (it must be read)
            busy = [w for w in crew.workers.values() if w.job is not None or w.owed]
            coming = list(crew.successors.coming.values())  # heard at the loop's top
            if not busy and not coming:  # cannot happen: every failure records a row or requeues
                raise RuntimeError(f"jobs {sorted(self.unfinished)} lost")
            now = time.monotonic()
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            starting = crew.successors.next_deadline()
            nearest = min([*deadlines, *([starting] if starting else [])], default=now + POLL_S)
            inboxes = [w.inbox for w in [*busy, *coming]]
            answered = wait(inboxes, timeout=max(0.0, min(POLL_S, nearest - now)))
            for worker in busy:
                if worker.inbox in answered and crew.workers.get(worker.device) is worker:
                    self._receive(worker)
            now = time.monotonic()
            for worker in [w for w in crew.workers.values() if w.job is not None or w.owed]:
                if worker.deadline is not None and now > worker.deadline:  # (or its "done")
                    self._fail(worker, Status.TIMEOUT, *self._timed_out(worker))
        # the last jobs' "done" (it follows their last row): every worker idle before the next
        # round, whose first job may need the worker that has its libraries (tune's final round)
        for worker in list(crew.workers.values()):
            while (worker.job is not None or worker.owed) and crew.workers.get(worker.device) is worker:
                if not wait([worker.inbox], timeout=DONE_WAIT_S):
                    break
                self._receive(worker)

    def _timed_out(self, worker: Worker) -> tuple[str, str]:
        """A TIMEOUT row's error and notes: the wait it had, and where it was (verify's
        warm-up runs before the job's first variant starts: WARM_UP_TIMEOUT_NOTE)."""
        job = self.states[worker.job].job if worker.job is not None else None
        if job is not None and job.warm_up and worker.current is None:
            waited = time.monotonic() - worker.since
            return (
                f"no result in {waited:.0f} s, its warm-up under way (--timeout {self.crew.timeout_s:g} s "
                f"plus {WARM_UP_S:g} s for a warm-up); worker killed",
                WARM_UP_TIMEOUT_NOTE,
            )
        return f"no result in {self.crew.timeout_s:g} s (--timeout); worker killed", ""

    def _choose(self, worker: Worker) -> tuple[int, CaseJob] | None:
        """The queued job the worker would take (dispatch.choose), or None: it waits."""
        now = time.monotonic()
        queued = [dispatch.Queued(i, frozenset(self.needs[i]), job.estimate_s) for i, job in self.queue]
        others = [self._as_other(w, now) for w in self.crew.workers.values() if w is not worker]
        successors = self.crew.successors
        coming = successors.libraries(worker.device)
        chosen = dispatch.choose(queued, worker.libraries, others, successors.import_s, coming)
        if chosen is None:
            return None
        return next(item for item in self.queue if item[0] == chosen.index)

    def _give(self, worker: Worker) -> bool:
        """Hand the idle worker the job it takes, if any; False if it was found dead. A worker
        still finishing its last job (its "done" owed) reads its pipe only after that: a job
        too big for the pipe's room waits for the "done" (the send would block the parent,
        for good if the worker hung there)."""
        taken = self._choose(worker)
        if taken is None:
            return True
        index, job = taken
        message = ForkingPickler.dumps(("job", index, job))
        if worker.owed and len(message) > PIPE_ROOM:
            return True  # it stays queued; the worker takes a job once its "done" is in
        self.queue.remove(taken)
        worker.libraries |= self.needs[index]  # it will have imported them
        if self.ready is not None and index not in self.readied:
            self.told.flush()  # ready may block (tune: nvcc): the rows heard are told first
            self.ready(index)
            self.readied.add(index)
        worker.job, worker.current, worker.dying = index, None, False
        worker.since = time.monotonic()
        allowance = worker.allowance(None, job.baselines, self.crew.startup_s)
        allowance += WARM_UP_S if job.warm_up else 0.0
        worker.deadline = worker.since + self.crew.timeout_s + allowance
        try:
            worker.outbox.send_bytes(message)
        except OSError:  # it died while idle (a successor killed as it waited):
            self._fail(worker, Status.CRASH, "", blame=False)  # the job goes back, no row
            return False
        return True

    def _record(self, worker: Worker, row: ResultRow) -> None:
        index = worker.job
        assert index is not None
        state = self.states[index]
        row = row.ran_on(worker.device, HOST)
        state.rows[row.label] = row
        if worker.current == row.label:
            worker.current = None
        self.told.row(index, row)
        if not state.remaining:
            rows = [state.rows[n] for n in state.names]
            self.unfinished.discard(index)
            self.told.job_done(index, rows)

    def _fail(self, worker: Worker, status: Status, error: str, notes: str = "", blame: bool = True) -> None:
        """End the worker: (blame) a row for the variant it was on, the rest of its job
        requeued; the loop starts a fresh worker in its place. A worker that dies between
        two jobs (its last one's "done" owed, the next not started) is not blamed."""
        job_index = worker.job
        if job_index is not None:
            state = self.states[job_index]
            name = worker.current or (state.remaining[0] if state.remaining else None)
            blame = blame and not (worker.owed and worker.current is None)
            if blame and name is not None and name not in state.rows:
                baseline = name in state.job.baselines
                failed = ResultRow.of(state.job.case, name, status, error, is_baseline=baseline, notes=notes)
                self._record(worker, failed)
            if state.remaining:
                self.queue.appendleft((job_index, _rest_of(state.job, state.remaining)))
        self.crew.kill(worker)

    def _as_other(self, worker: Worker, now: float) -> dispatch.Other:
        """A GPU as dispatch.choose sees it: the libraries of its worker and of its successor,
        idle or not, its work left (its job's, or the successor's import where that is
        longer)."""
        successors = self.crew.successors
        bringing = successors.libraries(worker.device)
        libraries = frozenset(worker.libraries | bringing)
        if worker.job is None:
            left: float | None = 0.0
        else:
            estimate = self.states[worker.job].job.estimate_s
            left = None if estimate is None else max(0.0, estimate - (now - worker.since))
        importing = successors.left_s(worker.device, now)
        if importing is not None:
            left = None if left is None else max(left, importing)
        idle = worker.job is None and not bringing
        return dispatch.Other(libraries, idle, left)

    def _receive(self, worker: Worker) -> None:
        try:
            message = worker.inbox.recv()
        except (EOFError, OSError):  # it died
            if worker.dying:  # after its CRASH row, as it should
                self._fail(worker, Status.CRASH, "", blame=False)
                return
            worker.proc.wait()
            output = worker.tail()
            died = f"worker died ({describe_exit(worker.proc.returncode)})"
            self._fail(worker, Status.CRASH, died + (f": {output}" if output else ""))
            return
        except Exception as exc:  # not a pickle: garbage on the channel
            self._fail(worker, Status.ERROR, f"worker sent garbage ({type(exc).__name__}: {exc})")
            return
        kind = message[0] if isinstance(message, tuple) and message else None
        a_row = kind == "row" and len(message) == 3 and isinstance(message[2], ResultRow)
        if kind == "started" and len(message) == 3 and message[1] == worker.job:
            worker.current = message[2]
            job = self.states[message[1]].job  # message[1] is worker.job
            allowance = worker.allowance(message[2], job.baselines, self.crew.startup_s)
            worker.deadline = time.monotonic() + self.crew.timeout_s + allowance
            worker.warm.add("job")
            self.told.started(job.case, message[2], worker.device)
        elif a_row and worker.job is not None:
            row = message[2]
            worker.warm.add(row.label)  # its library, if a baseline, is loaded now
            self._record(worker, row)
            if row.status is Status.CRASH:
                worker.dying = True
            elif not self.states[worker.job].remaining:  # its last row: free for the next job
                worker.job, worker.current = None, None
                worker.deadline = time.monotonic() + self.crew.timeout_s  # for its "done"
                worker.owed += 1
        elif kind == "done" and len(message) == 2:
            if worker.owed:  # the pipe keeps order: the "done" of a job it was freed from
                worker.owed -= 1  # (a round numbers its jobs from 0: the id cannot tell)
                if worker.job is None and not worker.owed:
                    worker.deadline = None
            else:
                worker.job, worker.current, worker.deadline = None, None, None
        else:
            self._fail(worker, Status.ERROR, f"worker sent garbage ({str(message)[:80]!r})")
