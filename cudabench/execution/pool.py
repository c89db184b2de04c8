"""Worker processes for a sweep: one per GPU, each taking jobs (one case each) from one queue
(a round of them: rounds.py).

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
worker_process.py's; the pool starts, replaces and stops them, and rounds.py runs the jobs on
them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from cudabench.core.records import DeviceInfo
from cudabench.execution import early, worker_process
from cudabench.execution.rounds import POLL_S, PoolEvents, Round
from cudabench.execution.successors import Successors
from cudabench.execution.worker_process import Worker, describe_exit, spawn, visible_gpu_count_list
from cudabench.measure.runner import CaseJob

__all__ = ["DEFAULT_TIMEOUT_S", "PoolError", "PoolEvents", "WorkerPool"]

DEFAULT_TIMEOUT_S = 300.0
STARTUP_TIMEOUT_S = 180.0  # Python, CuPy and a CUDA context, on a busy machine


class PoolError(RuntimeError):
    """A worker could not be started (no GPU, or GPUs that differ); one line for the user."""


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
        self._buses: dict[str, int] = {}  # each GPU's PCI bus id: the device whose worker has it

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
        # the GPUs a worker counts (one that sees its GPU alone counts 1: its device exists)
        seen = [n for n, w in zip(counts, [self.workers[d] for d in self.devices]) if w.visible is None]
        for device in self.devices:
            if seen and device >= min(seen):
                raise PoolError(f"GPU {device} does not exist (this machine has {min(seen)})")
        assert self.info is not None
        return self.info

    def start(self, device: int) -> int:
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
            self.kill(worker)
            raise PoolError(
                f"the worker for GPU {device} did not start in {self.startup_s:.0f} s"
                f" ({worker.tail() or 'no output'})"
            )
        try:
            message = worker.inbox.recv()
        except Exception:
            self.kill(worker)
            raise PoolError(
                f"the worker for GPU {device} failed to start: {worker.tail() or describe_exit(proc.poll())}"
            ) from None
        if message[0] == "unavailable":
            self.kill(worker)
            shown = f" (CUDA_VISIBLE_DEVICES={worker.visible})" if worker.visible is not None else ""
            raise PoolError(f"GPU {device}{shown}: {message[1]}" if shown else message[1])
        _, info, versions, count = message
        if self.info is None:
            self.info, self.versions = info, versions
        elif info.name != self.info.name:
            self.kill(worker)
            raise PoolError(
                f"GPU {device} is a {info.name}, GPU {self.devices[0]} a "
                f"{self.info.name}: one run needs identical GPUs"
            )
        first = self._buses.setdefault(info.pci_bus_id, device) if info.pci_bus_id else device
        if first != device:  # CUDA_VISIBLE_DEVICES naming one GPU twice (by index and UUID)
            self.kill(worker)
            raise PoolError(
                f"GPU {device} is GPU {first} again (PCI {info.pci_bus_id}): one worker a GPU; "
                "check --devices and CUDA_VISIBLE_DEVICES"
            )
        return int(count)

    def kill(self, worker: Worker) -> None:
        """Kill the worker (worker_process.kill) and forget it."""
        worker_process.kill(worker)
        if self.workers.get(worker.device) is worker:
            del self.workers[worker.device]

    def take_over(self) -> None:
        """Each ready successor takes its GPU over where the worker there is idle (or gone):
        that worker is killed, and the successor told to wait for its exit (the driver
        freeing its context, about 0.1 s on an H200) before it runs anything: one process
        on a GPU at a time, and the parent goes on with the other GPUs meanwhile. (A fresh
        worker that replaces a killed one gets no successor: it imports a library if it
        runs a job that needs one.)"""
        self.successors.listen(self.info.name if self.info else None)
        for device in list(self.successors.ready):
            current = self.workers.get(device)
            if current is not None and current.job is not None:
                continue
            successor = self.successors.take(device)
            try:
                if current is not None:  # idle: nothing of it runs on the GPU
                    worker_process.let_go(current, stop=False)
                    successor.outbox.send(("after", current.proc.pid))
            except OSError:  # it died as it waited: the next job's hand-over finds it
                pass
            finally:  # registered whatever happens (Ctrl-C): close() lets it go
                self.workers[device] = successor

    def bring(self, libraries: tuple[str, ...]) -> None:
        """A successor importing `libraries` for each GPU whose worker lacks one of them and
        whose successor (if any) does not bring them all: a pool kept across runs (a Dask
        worker's) meets the next run's libraries."""
        wanted = set(libraries)
        lacking = [
            d
            for d in self.devices
            if not wanted <= (self.workers[d].libraries if d in self.workers else set())
            and not wanted <= self.successors.libraries(d)
        ]
        if not lacking:
            return
        self.successors.preload = tuple(dict.fromkeys((*self.successors.preload, *libraries)))
        self.started_workers += self.successors.spawn(lacking)

    def close(self, graceful: bool = True) -> None:
        """Let the workers go (worker_process.let_go): those between jobs are asked to stop
        (graceful), the rest are killed; nothing waits for their exits."""
        for worker in list(self.workers.values()):
            idle = worker.job is None and not worker.owed
            worker_process.let_go(worker, stop=graceful and idle)
        self.workers.clear()
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
            self.take_over()
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
        """Run every job; each (case, variant) ends as exactly one row, reported to `events`
        (rounds.py). `ready(i)`, if given, is called (and may block) before job i first goes
        to a worker."""
        Round(self, jobs, events, ready).run()
