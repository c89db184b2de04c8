"""How the GPU backend (cupy_backend.py) times one sample, and CuPy's CUDA errors as
KernelCrash (which both raise).

Timing (see measure.py for when each is used):
- hot, `graph`: `batch` launches captured once into a CUDA graph; each sample replays the
  graph between two events and divides by `batch`. Replaying a graph costs the GPU well under
  a microsecond a launch, so short kernels are not swamped by the ~4-5 us of launch and event
  overhead that one launch per event pair pays.
- hot, `single` (batch 1: launches of 50 us and more): a spin kernel holds the GPU for
  SPIN_US while the start event, the launch and the end event are queued behind it, so the
  events bracket the kernel alone, run in isolation as Nsight Compute runs it (nvbench's
  blocking-kernel idea, with a timed spin instead of a host flag). The spin lasts SPIN_US, or
  SPIN_PER_HOST times the call's own queuing time when that is longer: a library call
  (torch's dispatch) outlasted a 50 us spin and the idle GPU between the events was
  counted (torch's 2^24 sum read 105 us against ncu's 31 on an H100).
- hot, `loop`: the same, but launched from a Python loop; used only when a call cannot be
  captured (some library calls). The table says which method ran.
- cold, `single`: before each sample a kernel reads a buffer of twice the L2 size (and writes
  nothing), which evicts the input from L2 and leaves it holding clean lines, as Nsight
  Compute's `--cache-control all` does. (A memset would leave the L2 full of dirty lines whose
  write-back lands in the timed kernel: measured +10% at 442368x128 on an H200.) The flush
  also keeps the GPU busy while the timed launch is queued behind it, so the start event and
  the kernel run back to back (a slow caller, as above, gets a spin after the flush).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import cupy as cp
import numpy as np

from cudabench.backends.base import FLUSH, LAUNCH, RESET, SPIN, KernelCrash, Scope, sample_steps
from cudabench.backends.cupti_clock import LaunchTime, launch_times


class Device(Protocol):
    """What a sampler needs of the GPU backend (cupy_backend.CupyBackend): its device, its
    stream, a synchronize, and the step log tests read."""

    device: Any
    stream: Any
    step_log: Any

    def device_info(self) -> Any: ...

    def synchronize(self) -> None: ...


CUDA_ERRORS = (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)
SPIN_US = 50.0  # longer than Python takes to queue an event, a launch and an event
# A call whose host side takes longer (a library's dispatch, such as torch's) gets a spin
# of this many times its measured queuing time, so the GPU is still busy when it is queued.
SPIN_PER_HOST = 3.0
_SPIN_SOURCE = r"""
extern "C" __global__ void cudabench_spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
"""

_FLUSH_SOURCE = r"""
extern "C" __global__ void cudabench_flush(const float4* buffer, long long count, float* sink) {
  float total = 0.0f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 v = buffer[i];
    total += (v.x + v.y) + (v.z + v.w);
  }
  if (total == 1.0f) sink[0] = total;  // never true (the buffer holds zeros): keeps the loads
}
"""
FLUSH_BLOCKS_PER_SM = 16


def crash_from(exc: BaseException) -> KernelCrash:
    """A CuPy CUDA error as KernelCrash named like `cudaErrorIllegalAddress`."""
    text = str(exc)
    name, _, detail = text.partition(":")
    return KernelCrash(name.strip() or type(exc).__name__, detail.strip())


class Samplers:
    """Makes the samplers of one backend: a CUDA graph of `batch` calls, a Python loop where
    a call cannot be captured, or single launches behind a spin or an L2 flush. Holds the spin
    and flush kernels, made once."""

    def __init__(self, backend: Device) -> None:
        self.backend = backend
        self._spin: Any = None
        self._flush: Any = None

    def make(
        self, call: Callable[[], None], batch: int, cold: bool, scope: Scope, reset: Callable[[], None] | None
    ) -> Sampler:
        """The sampler of `call` (`reset` restores an in-place op's input before each sample)."""
        if cold or batch == 1:
            if reset is not None:
                reset()
            spin_us = max(SPIN_US, SPIN_PER_HOST * self._host_us(call))  # one untimed call
            steps = sample_steps(cold, single=True, slow_caller=spin_us > SPIN_US, reset=reset is not None)
            actions: dict[str, Callable[[], None]] = {RESET: reset or (lambda: None)}
            if SPIN in steps:
                actions[SPIN] = self._hold(spin_us)
            if cold:  # the flush holds the GPU too; a slow caller also spins after it
                actions[FLUSH] = self._flusher()
            return Sampler(self.backend, call, 1, "single", scope, before=self._steps(steps, actions))
        try:
            self.backend.stream.begin_capture()
            try:
                for _ in range(batch):
                    call()
            finally:
                graph = self.backend.stream.end_capture()
            graph.upload(self.backend.stream)
            steps = sample_steps(False, single=False, reset=reset is not None)
            return Sampler(
                self.backend,
                call,
                batch,
                "graph",
                scope,
                graph=graph,
                before=self._steps(steps, {RESET: reset or (lambda: None)}),
            )
        except CUDA_ERRORS as exc:
            if "Capture" not in str(exc) and "capture" not in str(exc):
                raise crash_from(exc) from exc
            # a library call that cannot be captured (e.g. torch allocating, or syncing):
            # the capture failed, not the kernel; time it from a Python loop instead
        except Exception:  # a call that cannot be captured (e.g. it synchronizes)
            pass
        self.backend.synchronize()
        steps = sample_steps(False, single=False, reset=reset is not None)
        return Sampler(
            self.backend,
            call,
            batch,
            "loop",
            scope,
            before=self._steps(steps, {RESET: reset or (lambda: None)}),
        )

    def _steps(self, steps: tuple[str, ...], actions: dict[str, Callable[[], None]]) -> Callable[[], None]:
        """The untimed part of a sample: each step before the launch, in order, recorded in
        `step_log` when one is set (the launch records itself). A step without an action is
        a bug (KeyError), never silently skipped."""
        before = [(name, actions[name]) for name in steps if name != LAUNCH]

        def run() -> None:
            log = self.backend.step_log
            if log is not None:
                log.begin()
            for name, action in before:
                action()
                if log is not None:
                    log.step(name)

        return run

    def _hold(self, us: float = SPIN_US) -> Callable[[], None]:
        """A launch that keeps the GPU busy for about `us` (at the highest SM clock)."""
        if self._spin is None:
            clock_khz = cp.cuda.runtime.deviceGetAttribute(13, self.backend.device.id)  # kHz
            self._spin = (cp.RawKernel(_SPIN_SOURCE, "cudabench_spin"), clock_khz)
        kernel, clock_khz = self._spin
        cycles = np.int64(us * clock_khz / 1000.0)
        return lambda: kernel((1,), (1,), (cycles,))

    def _host_us(self, call: Callable[[], None]) -> float:
        """How long Python takes to queue one call (the GPU held busy meanwhile, so the
        launch cannot run inline): the part of a sample the spin must cover."""
        self._hold(4 * SPIN_US)()
        start = time.perf_counter()
        call()
        host = (time.perf_counter() - start) * 1e6
        self.backend.synchronize()
        return host

    def _flusher(self) -> Callable[[], None]:
        """A launch that reads twice the L2 size, so nothing of the input survives in L2."""
        if self._flush is None:
            info = self.backend.device_info()
            buffer = cp.zeros(2 * info.l2_bytes // 4, dtype=cp.float32)
            sink = cp.zeros(1, dtype=cp.float32)
            kernel = cp.RawKernel(_FLUSH_SOURCE, "cudabench_flush")
            grid, count = (info.sm_count * FLUSH_BLOCKS_PER_SM,), np.int64(buffer.size // 4)
            self._flush = lambda: kernel(grid, (256,), (buffer, count, sink))
        flush: Callable[[], None] = self._flush
        return flush


class Sampler:
    """One timed sample: `before` (the L2 flush, or the spin that hides launch overhead),
    then the start event, the graph or the calls, the end event. With the kernel clock
    (`clock`, a CuptiCollector) the launches also run under the sample's external
    correlation id, and `launch_times()` reads them back from CUPTI's records."""

    def __init__(
        self,
        backend: Device,
        call: Callable[[], None],
        batch: int,
        method: str,
        scope: Scope,
        graph: Any = None,
        before: Callable[[], None] | None = None,
    ) -> None:
        self.backend, self.call, self.batch, self.method = backend, call, batch, method
        self.scope, self.graph, self.before = scope, graph, before
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()
        self.clock: Any = None  # the CuptiCollector, for the kernel clock
        self.taken: list[tuple[int, int]] = []  # (external id, launches) of each sample

    def __call__(self) -> float:
        stream = self.backend.stream
        try:
            if self.before is not None:
                self.before()
            tag = contextlib.nullcontext()
            if self.clock is not None:
                sample_id = self.clock.new_id()
                self.taken.append((sample_id, self.batch))
                tag = self.clock.tag(sample_id)
            self.start.record(stream)
            if self.backend.step_log is not None:
                self.backend.step_log.step(LAUNCH)
            with self.scope(), tag:  # the NVTX ranges and the tag: around the launches only
                if self.graph is not None:
                    self.graph.launch(stream)
                else:
                    for _ in range(self.batch):
                        self.call()
            self.end.record(stream)
            self.end.synchronize()
            elapsed_ms: float = cp.cuda.get_elapsed_time(self.start, self.end)
            return elapsed_ms / self.batch
        except CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def enqueue(self) -> Any:
        """One replay queued, and an event after it (its `done` queries the GPU)."""
        stream = self.backend.stream
        try:
            with self.scope():
                if self.graph is not None:
                    self.graph.launch(stream)
                else:
                    for _ in range(self.batch):
                        self.call()
            marker = cp.cuda.Event(disable_timing=True)
            marker.record(stream)
            return marker
        except CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def launch_times(self) -> list[LaunchTime]:
        self.backend.synchronize()
        kernels, external = self.clock.records()
        return launch_times(kernels, external, self.taken)
