"""A round of jobs (rounds.py) on scripted workers: threads at the far end of real pipes, so
that the order of messages, the order they are heard and when the next job goes out are
what the test says. (test_pool.py runs the same rounds on real worker processes.)"""

import dataclasses
import pickle
import threading
import time
from multiprocessing import Pipe

import pytest

from cudabench.core.records import Case, KernelVariant, Launch, ResultRow, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution import rounds
from cudabench.execution.rounds import Round
from cudabench.execution.successors import Successors
from cudabench.execution.worker_process import Worker
from cudabench.measure.runner import CaseJob

QUICK = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)


def job(n, *names):
    variants = tuple(
        KernelVariant("reduce", name, f"/k/{name}.cu", (Launch(f"reduce_sum_{name}", 256, "segments"),), "t")
        for name in names
    )
    return CaseJob(Case("reduce", (n,)), variants, (), QUICK)


class Proc:
    """What a round asks of a worker's process: its exit."""

    returncode = 0

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


class Log:
    def seek(self, *_):
        pass

    def read(self):
        return b""

    def close(self):
        pass


class Scripted:
    """A worker in a thread: `script(inbox, outbox, heard)` plays its side of the pipes;
    `heard` is the messages it received, as it received them."""

    def __init__(self, device, script):
        parent_in, child_out = Pipe(duplex=False)
        child_in, parent_out = Pipe(duplex=False)
        self.heard = []
        self.worker = Worker(device, Proc(), parent_in, parent_out, Log())
        self.thread = threading.Thread(target=script, args=(child_in, child_out, self.heard), daemon=True)
        self.thread.start()


class Crew:
    """The pool as a round sees it, with scripted workers and no successors."""

    def __init__(self, *scripted, spare=None):
        self.workers = {s.worker.device: s.worker for s in scripted}
        self.devices = sorted(self.workers)
        self.successors = Successors("events", (), 10.0)
        self.timeout_s, self.startup_s = 30.0, 10.0
        self.spare = spare  # the script of a fresh worker, when one is started
        self.started, self.killed = [], []

    def take_over(self):
        pass

    def start(self, device):
        fresh = Scripted(device, self.spare)
        self.workers[device] = fresh.worker
        self.started.append(fresh)
        return 1

    def kill(self, worker):
        self.killed.append(worker.device)
        self.workers.pop(worker.device, None)


def row(job_, name, status=Status.OK):
    return ResultRow.of(job_.case, name, status, "")


def serve(inbox, outbox, heard, hold_done=False):
    """A well-behaved worker: each variant "started" then its row; "done" after the last,
    or (hold_done) only once the next job has arrived down the pipe, or, when none comes
    for half a second, late (`heard` says which)."""
    pending = None
    try:
        while True:
            if not inbox.poll(0.5 if pending is not None else 5.0):
                if pending is None:
                    return
                heard.append(("late done", pending))
                outbox.send(("done", pending))
                pending = None
                continue
            message = inbox.recv()
            heard.append(message[:2])
            if pending is not None:
                outbox.send(("done", pending))
            _, index, j = message
            for variant in j.variants:
                outbox.send(("started", index, variant.label))
                outbox.send(("row", index, row(j, variant.label)))
            if hold_done:
                pending = index
            else:
                outbox.send(("done", index))
    except (EOFError, OSError):  # the round is over and its pipes gone
        return


class Told:
    def __init__(self):
        self.calls = []
        self.rows = []

    def started(self, case, name, device):
        self.calls.append(("started", name))

    def row(self, index, row_):
        self.calls.append(("row", row_.variant))
        self.rows.append(row_)

    def job_done(self, index, rows):
        self.calls.append(("job_done", index, [r.variant for r in rows]))


def test_a_job_last_row_frees_its_worker_before_its_done():
    """The worker here says "done" for a job once the next job is in its pipe (or late, after
    half a second without one): a round that waited for "done" before handing out the next
    job would see every "done" late."""
    jobs = [job(16, "a", "b"), job(32, "c"), job(64, "d")]
    scripted = Scripted(0, lambda i, o, h: serve(i, o, h, hold_done=True))
    crew = Crew(scripted)
    told = Told()
    finished = threading.Thread(target=Round(crew, jobs, told).run, daemon=True)
    finished.start()
    finished.join(20.0)
    assert not finished.is_alive(), "the round waited for a done that comes only after the next job"
    assert scripted.heard == [("job", 0), ("job", 1), ("job", 2), ("late done", 2)]
    assert ("job_done", 2, ["d"]) in told.calls
    assert crew.workers[0].owed == 0 and crew.workers[0].job is None  # the late "done" was read


def test_the_next_job_goes_out_before_the_caller_hears_the_last_row():
    """The sinks (results files, database) are told after the idle worker has its next job:
    when the caller hears job 0's last row, job 1 is already down the worker's pipe."""
    jobs = [job(16, "a"), job(32, "b")]
    scripted = Scripted(0, serve)
    crew = Crew(scripted)
    sent = []
    outbox = crew.workers[0].outbox
    real_send = outbox.send_bytes

    def send_bytes(data):
        sent.append(pickle.loads(data)[:2])
        real_send(data)

    outbox.send_bytes = send_bytes
    seen = {}

    class Slow(Told):
        def row(self, index, row_):
            seen.setdefault(row_.variant, list(sent))
            super().row(index, row_)

    told = Slow()
    Round(crew, jobs, told).run()
    assert ("job", 1) in seen["a"]  # job 1 went out before job 0's row reached the caller
    # and the caller hears everything in the order it happened
    assert told.calls == [
        ("started", "a"),
        ("row", "a"),
        ("job_done", 0, ["a"]),
        ("started", "b"),
        ("row", "b"),
        ("job_done", 1, ["b"]),
    ]


def test_a_worker_that_dies_between_jobs_is_not_blamed_for_the_next():
    """Freed at its job's last row, the worker dies before its "done": the job it was handed
    never started, so it goes back whole (no CRASH row) to a fresh worker."""
    jobs = [job(16, "a"), job(32, "b")]

    def dies_after_first(inbox, outbox, heard):
        _, index, j = inbox.recv()
        heard.append(("job", index))
        outbox.send(("started", index, "a"))
        outbox.send(("row", index, row(j, "a")))
        while not inbox.poll(0.05):  # the next job arrives; then it dies without a word
            pass
        outbox.close()

    crew = Crew(Scripted(0, dies_after_first), spare=serve)
    told = Told()
    Round(crew, jobs, told).run()
    rows = [c for c in told.calls if c[0] == "job_done"]
    assert rows == [("job_done", 0, ["a"]), ("job_done", 1, ["b"])]
    assert crew.killed == [0] and len(crew.started) == 1
    assert crew.started[0].heard[:1] == [("job", 1)]


@pytest.mark.parametrize("names", [("a", "b"), ("a",)])
def test_a_crash_row_keeps_its_worker_on_the_job_until_it_exits(names):
    """A CRASH row (the context is lost, the worker exits) never frees the worker for a next
    job, even as its job's last row: the rest of the job, and the next, go to a fresh worker."""
    jobs = [job(16, *names), job(32, "c")]

    def crashes(inbox, outbox, heard):
        _, index, j = inbox.recv()
        heard.append(("job", index))
        outbox.send(("started", index, "a"))
        outbox.send(("row", index, row(j, "a", Status.CRASH)))
        time.sleep(0.2)
        heard.append(("pipe after crash", inbox.poll(0)))
        outbox.close()

    first = Scripted(0, crashes)
    crew = Crew(first, spare=serve)
    told = Told()
    Round(crew, jobs, told).run()
    assert ("pipe after crash", False) in first.heard  # nothing was sent to the dying worker
    done = {c[1]: c[2] for c in told.calls if c[0] == "job_done"}
    assert done == {0: list(names), 1: ["c"]}


def test_a_done_late_past_the_round_is_not_taken_for_the_next_rounds_job(monkeypatch):
    """A round numbers its jobs from 0 (a Dask task's round is one job 0): a "done" that comes
    after its round gave up waiting belongs to the old job 0, not the next round's."""
    monkeypatch.setattr(rounds, "DONE_WAIT_S", 0.1)

    def late_done(inbox, outbox, heard):
        _, index, j = inbox.recv()
        outbox.send(("started", index, "a"))
        outbox.send(("row", index, row(j, "a")))
        time.sleep(0.5)  # its end slower than the round waits
        outbox.send(("done", index))
        serve(inbox, outbox, heard)

    crew = Crew(Scripted(0, late_done), spare=serve)
    Round(crew, [job(16, "a")], Told()).run()
    assert crew.workers[0].owed == 1  # carried into the next round
    time.sleep(0.6)  # the old ("done", 0) is in the pipe now
    told = Told()
    Round(crew, [job(32, "b")], told).run()
    assert ("job_done", 0, ["b"]) in told.calls
    assert crew.killed == [] and crew.workers[0].owed == 0


def test_a_job_too_big_for_the_pipe_waits_for_the_done_and_a_hung_end_times_out():
    """The worker reads its pipe only once its last job's "done" is out: a job bigger than
    the pipe's room is not sent before (the parent would block, here for good: the worker
    hangs after its last row); the owed "done" has the --timeout, then a fresh worker runs it."""
    big = job(64, *[f"v{i:05d}_with_a_longish_label" for i in range(2000)])
    assert len(pickle.dumps(("job", 1, big))) > rounds.PIPE_ROOM

    def hangs(inbox, outbox, heard):
        _, index, j = inbox.recv()
        outbox.send(("started", index, "a"))
        outbox.send(("row", index, row(j, "a")))
        time.sleep(8)  # hung after its last row, never reading its pipe

    crew = Crew(Scripted(0, hangs), spare=serve)
    crew.timeout_s = 0.5
    told = Told()
    finished = threading.Thread(target=Round(crew, [job(16, "a"), big], told).run, daemon=True)
    finished.start()
    finished.join(6.0)
    assert not finished.is_alive(), "the parent blocked sending a big job to a worker not reading"
    assert crew.killed == [0]  # its "done" never came within the timeout: killed, no row blamed
    assert [c[1] for c in told.calls if c[0] == "job_done"] == [0, 1]
    assert all(c[0] != "row" or c[1] == "a" or c[1].startswith("v") for c in told.calls)


def test_rows_heard_are_told_before_ready_may_block():
    """`ready(i)` may block (tune waits there for nvcc): the rows heard before it are told
    first, so that the sweep's clock of when each row ended is not held up by the wait."""
    jobs = [job(16, "a"), job(32, "b")]
    told = Told()
    at_ready = {}

    def ready(index):
        at_ready[index] = list(told.calls)

    Round(Crew(Scripted(0, serve)), jobs, told, ready).run()
    assert ("row", "a") in at_ready[1] and ("job_done", 0, ["a"]) in at_ready[1]


def test_a_job_carrying_a_warm_up_gets_more_time_before_its_first_started(monkeypatch):
    """verify's warm-up runs before the job's first "started" (runner.py): a worker that
    spends longer than --timeout on it, but less than that plus WARM_UP_S, is not killed."""
    monkeypatch.setattr(rounds, "WARM_UP_S", 1.5)

    def warming(inbox, outbox, heard):
        try:
            _, index, j = inbox.recv()
            heard.append(("job", index))
            time.sleep(1.0)  # the warm-up: past the 0.5 s timeout, within 0.5 + 1.5
            outbox.send(("started", index, j.variants[0].label))
            outbox.send(("row", index, row(j, j.variants[0].label)))
            outbox.send(("done", index))
        except (EOFError, OSError):  # killed: the round closed its pipes
            return

    def run(warm_up):
        crew = Crew(Scripted(0, warming), spare=warming)
        crew.timeout_s, crew.startup_s = 0.5, 0.0  # no start-up allowance: a used worker
        told = Told()
        Round(crew, [dataclasses.replace(job(16, "a"), warm_up=warm_up)], told).run()
        return crew, told

    crew, told = run(((1,), (2,)))
    assert crew.killed == [] and ("job_done", 0, ["a"]) in told.calls
    crew, told = run(())  # without a warm-up the same wait is a hang
    assert crew.killed == [0]
    monkeypatch.setattr(rounds, "WARM_UP_S", 0.2)  # a warm-up past its own allowance is killed
    crew, told = run(((1,),))
    assert crew.killed == [0]
    (timed_out,) = told.rows  # not the variant's doing: its row says so, typed
    assert timed_out.status is Status.TIMEOUT and timed_out.notes == rounds.WARM_UP_TIMEOUT_NOTE


def test_a_timeout_during_a_warm_up_says_so():
    crew = Crew(Scripted(0, lambda i, o, h: None))
    crew.timeout_s = 0.5
    round_ = Round(crew, [dataclasses.replace(job(16, "a"), warm_up=((1,),))], Told())
    worker = crew.workers[0]
    worker.job, worker.current, worker.since = 0, None, time.monotonic() - 1.0
    error, notes = round_._timed_out(worker)
    assert "its warm-up under way (--timeout 0.5 s plus 60 s for a warm-up)" in error
    assert notes == rounds.WARM_UP_TIMEOUT_NOTE  # typed: verify checks the shape again without it
    worker.current = "a"  # the variant's own check had started
    assert round_._timed_out(worker) == ("no result in 0.5 s (--timeout); worker killed", "")
