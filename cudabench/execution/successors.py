"""The pool's successors: beside each GPU's plain worker, a worker process that imports the
jobs' libraries (`preload`: torch, about 4.5 s on an H200 machine; triton for a Triton
variant) as it starts, and then takes that GPU over (pool.py hands it the GPU once the plain
worker there is between jobs, and kills the plain one; the successor waits for that exit
before it runs anything: one process runs on a GPU at a time).

The import is CPU work, and the successor runs no kernel until it is in charge, so no GPU
waits for the import: on four H200s the seeds sweep's rows held 57.6 s of work when GPUs
imported torch on their own time, 52.9 s with successors (docs/guide/running.md). Its CUDA
context (and CUPTI, for a kernel clock) is made beside the plain worker's timing, and the
context's memory is held while it waits: a case sized to the GPU's last free bytes may be
SKIPPED meanwhile. A successor that fails, says anything but ready, finds another GPU model, or is
not ready within the start-up time is killed and dropped, with no row: the jobs that need its
libraries then go to a worker that imports them (dispatch.py).

Nothing here decides which job runs where (dispatch.py) or starts a plain worker (pool.py).
"""

from __future__ import annotations

import time
from multiprocessing.connection import wait

from cudabench.execution.worker_process import Worker, kill, let_go, spawn

IMPORT_S = 4.5  # torch's import on an H200 machine, until a successor's start-up is measured


class Successors:
    """The successors of one pool, by device: those still starting, and those ready to take
    their GPU over. `import_s`: the last one's start-up, from spawn to ready."""

    def __init__(self, timer: str, preload: tuple[str, ...], startup_s: float) -> None:
        self.timer, self.preload, self.startup_s = timer, preload, startup_s
        self.coming: dict[int, Worker] = {}
        self.ready: dict[int, Worker] = {}
        self.import_s = IMPORT_S

    def __len__(self) -> int:
        return len(self.coming) + len(self.ready)

    def spawn(self, devices: list[int]) -> int:
        """A successor for each device (none without libraries to preload), in place of one
        it had; how many started."""
        for device in devices if self.preload else ():
            for earlier in (self.coming.pop(device, None), self.ready.pop(device, None)):
                if earlier is not None:
                    let_go(earlier, stop=False)
            self.coming[device] = spawn(device, self.timer, self.preload)
        return len(devices) if self.preload else 0

    def libraries(self, device: int) -> set[str]:
        """What the device's successor brings (starting or ready), or nothing."""
        worker = self.coming.get(device) or self.ready.get(device)
        return set(worker.libraries) if worker is not None else set()

    def bringing(self) -> tuple[str, ...]:
        """The libraries successors still starting will bring (parts.split's `later`)."""
        return tuple(sorted({name for w in self.coming.values() for name in w.libraries}))

    def left_s(self, device: int, now: float) -> float | None:
        """The seconds until the device's starting successor is ready, by the last measured
        start-up; None where none is starting."""
        worker = self.coming.get(device)
        return None if worker is None else max(0.0, self.import_s - (now - worker.since))

    def hear(self, worker: Worker, gpu_name: str | None) -> None:
        """A starting successor's message: ready (it waits to take over), or anything else
        (it failed, or its GPU is another model): it is killed."""
        try:
            message = worker.inbox.recv()
        except Exception:
            message = None
        ok = isinstance(message, tuple) and len(message) == 4 and message[0] == "ready"
        del self.coming[worker.device]
        if not ok or (gpu_name is not None and message[1].name != gpu_name):
            kill(worker)
            return
        self.ready[worker.device] = worker
        self.import_s = time.monotonic() - worker.since

    def listen(self, gpu_name: str | None, timeout: float = 0.0) -> None:
        """Hear the starting successors that have spoken, waiting up to `timeout` for one; kill
        those past the start-up time, and the ready ones that spoke (a ready successor says
        nothing until it has a job: it died, or sent garbage)."""
        for worker in [w for w in self.ready.values() if w.inbox in wait([w.inbox], timeout=0)]:
            del self.ready[worker.device]
            kill(worker)
        starting = list(self.coming.values())
        for inbox in wait([w.inbox for w in starting], timeout=timeout) if starting else ():
            self.hear(next(w for w in starting if w.inbox is inbox), gpu_name)
        now = time.monotonic()
        for worker in [w for w in self.coming.values() if now - w.since > self.startup_s]:
            del self.coming[worker.device]
            kill(worker)

    def next_deadline(self) -> float | None:
        """When the first starting successor runs out of start-up time (time.monotonic)."""
        return min((w.since + self.startup_s for w in self.coming.values()), default=None)

    def take(self, device: int) -> Worker:
        """The device's ready successor, handed over (it is the pool's worker from now on)."""
        return self.ready.pop(device)

    def close(self) -> None:
        for worker in [*self.coming.values(), *self.ready.values()]:
            let_go(worker, stop=False)
        self.coming.clear()
        self.ready.clear()
