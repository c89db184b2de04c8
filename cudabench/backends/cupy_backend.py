"""The GPU backend: CuPy for device memory, module loading, launches, events and graphs.

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
from typing import Any

import numpy as np

try:
    import cupy as cp
except ImportError as exc:  # pragma: no cover - depends on the machine
    from cudabench.backends.base import BackendUnavailable

    raise BackendUnavailable(
        "CuPy is not installed: pip install -e '.[cuda13]' (or '.[cuda12]'), see README"
    ) from exc

from cudabench.backends.base import (
    FLUSH,
    LAUNCH,
    RESET,
    SPIN,
    BackendUnavailable,
    KernelCrash,
    Loaded,
    Scope,
    StepLog,
    sample_steps,
)  # fmt: skip
from cudabench.compile import compile_variant
from cudabench.cupti_clock import KernelClockUnavailable, LaunchTime, launch_times
from cudabench.nvml import Gauge, open_gauge, with_facts
from cudabench.ops.base import dims
from cudabench.spec import DeviceInfo, KernelVariant

_CUDA_ERRORS = (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)
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
_EMPTY_SOURCE = 'extern "C" __global__ void cudabench_empty() {}'

def crash_from(exc: BaseException) -> KernelCrash:
    """A CuPy CUDA error as KernelCrash named like `cudaErrorIllegalAddress`."""
    text = str(exc)
    name, _, detail = text.partition(":")
    return KernelCrash(name.strip() or type(exc).__name__, detail.strip())


def _version(code: int) -> str:
    return f"{code // 1000}.{(code % 1000) // 10}"


def _driver_release() -> str:
    """The driver's release (e.g. 580.159.04) from NVML; '' when NVML does not answer."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML library or no driver: the runtime's CUDA version stands in
        return ""
    return version.decode() if isinstance(version, bytes) else str(version)


def driver_present() -> bool:
    """Whether the NVIDIA driver's library (libcuda) can be loaded on this machine."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def no_gpu_reason(exc: BaseException) -> str:
    """One line for a runtime that cannot start: no driver at all reads differently from a
    driver that is too old (CUDA says "insufficient" for both)."""
    text = str(exc)
    if "InsufficientDriver" in text and not driver_present():
        return ("no NVIDIA driver found (libcuda.so.1 does not load): run, tune, ceilings and "
                "profile need a GPU and its driver; list, check, compare, report and history "
                "work without one")
    if "InsufficientDriver" in text:
        return (f"the NVIDIA driver is older than CUDA {cp.cuda.runtime.runtimeGetVersion()} "
                "(this CuPy's runtime) needs: update the driver or install the CuPy of an "
                "older CUDA (see README)")
    if "NoDevice" in text:
        return "no CUDA GPU found (the driver is loaded but sees no device)"
    return f"no usable CUDA GPU or driver: {text}"


class CupyBackend:
    name = "cupy"

    def __init__(self, device: int = 0) -> None:
        try:
            count = cp.cuda.runtime.getDeviceCount()
        except _CUDA_ERRORS as exc:
            raise BackendUnavailable(no_gpu_reason(exc)) from exc
        if count == 0:
            raise BackendUnavailable("no CUDA GPU found")
        if not 0 <= device < count:
            raise BackendUnavailable(f"GPU {device} does not exist (this machine has {count})")
        self.xp = cp
        self.device = cp.cuda.Device(device)
        self.device.use()
        # One stream for everything, made current so that CuPy's own work (inputs, reference,
        # checks, baselines) is ordered with the kernels: no races, no implicit syncs. It is
        # never entered with `with`: leaving such a block makes the null stream current again.
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.stream.use()
        self._info: DeviceInfo | None = None
        self._flush: Any = None
        self._spin: Any = None
        self._empty: Any = None
        # function id -> (function, the dynamic shared memory it opted in to); the function is
        # held so that its id cannot be reused by another
        self._opted: dict[int, tuple[Any, int]] = {}
        self._nvml: Gauge | bool | None = None  # the gauges once opened; False where NVML is missing
        self.step_log: StepLog | None = None  # tests: the steps each sample runs

    def activate(self) -> None:
        # a backend made later in this thread made its own stream current: CuPy's work for
        # this one (inputs, references, checks) would go there, unordered with our launches
        self.device.use()
        self.stream.use()

    def device_info(self) -> DeviceInfo:
        if self._info is None:
            rt = cp.cuda.runtime
            props = rt.getDeviceProperties(self.device.id)
            mem_khz = props.get("memoryClockRate") or rt.deviceGetAttribute(36, self.device.id)
            bus = props.get("memoryBusWidth") or rt.deviceGetAttribute(37, self.device.id)
            name = props["name"]
            self._info = DeviceInfo(
                name=name.decode() if isinstance(name, bytes) else str(name),
                compute_capability=f"{props['major']}.{props['minor']}",
                sm_count=int(props["multiProcessorCount"]),
                memory_clock_mhz=mem_khz / 1000.0,
                bus_width_bits=int(bus),
                l2_bytes=int(props["l2CacheSize"]),
                total_memory_bytes=int(props["totalGlobalMem"]),
                driver_version=_driver_release() or _version(rt.driverGetVersion()),
                runtime_version=_version(rt.runtimeGetVersion()),
                max_threads_per_sm=int(props["maxThreadsPerMultiProcessor"]),
                sm_clock_mhz=rt.deviceGetAttribute(13, self.device.id) / 1e3,  # ClockRate, kHz
                pci_bus_id=self.device.pci_bus_id,
            )
            self._info = with_facts(self._info, self.gauge())  # the run's fingerprint holds them
        return self._info

    def versions(self) -> dict[str, str]:
        return {"cupy": cp.__version__}

    def device_count(self) -> int:
        return int(cp.cuda.runtime.getDeviceCount())

    def gauge(self) -> Gauge | None:
        """NVML's gauges of this GPU (found by its PCI bus id), opened once."""
        if self._nvml is None:
            self._nvml = open_gauge(self.device.pci_bus_id) or False
        return None if isinstance(self._nvml, bool) else self._nvml

    def kernel_clock_error(self) -> str:
        from cudabench.backends import cupti

        try:
            cupti.collector()
        except KernelClockUnavailable as exc:
            return str(exc)
        return ""

    def kernel_clock(self) -> contextlib.AbstractContextManager[None]:
        from cudabench.backends import cupti

        return cupti.collector().session()

    def empty_call(self) -> Callable[[], None]:
        if self._empty is None:
            kernel = cp.RawKernel(_EMPTY_SOURCE, "cudabench_empty")
            self._empty = lambda: kernel((1,), (1,), ())
        return self._empty

    def free_bytes(self) -> int:
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        return int(cp.cuda.runtime.memGetInfo()[0])

    def load(self, variant: KernelVariant, dtype: str = "float32") -> Loaded:
        compiled = compile_variant(variant, self.device_info().arch, dtype)
        module = cp.RawModule(path=str(compiled.cubin))
        functions = tuple(module.get_function(name) for name in compiled.names)
        res = compiled.launch_resources
        return Loaded(
            functions=functions,
            blocks_per_sm=tuple(
                self._occupancy(f, launch.block) for f, launch in zip(functions, variant.launches)
            ),
            registers=max(r.registers for r in res),
            spill_bytes=max(r.spill_bytes for r in res),
        )

    def _occupancy(self, function: Any, block: int) -> int:
        """Resident blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor); 0 when one
        block does not fit (too many registers x threads): the runner skips such a launch."""
        # RawKernel.kernel is the loaded cupy.cuda.function.Function; .ptr its CUfunction
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            function.kernel.ptr, block, 0))  # fmt: skip

    def launch(self, function: Any, grid: Any, block: Any, args: tuple[Any, ...],
               shared_bytes: int = 0) -> None:  # fmt: skip
        try:  # on the current stream: self.stream
            opted = self._opted.get(id(function), (None, 0))[1]
            if shared_bytes > opted:
                # a block's static and dynamic shared memory above 48 KiB needs the kernel's
                # opt-in to the dynamic part: given whenever a launch asks more than before
                function.max_dynamic_shared_size_bytes = shared_bytes
                self._opted[id(function)] = (function, shared_bytes)
            function(dims(grid), dims(block), args, shared_mem=shared_bytes)
        except _CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def fill_bytes(self, array: Any, byte: int) -> None:
        cp.cuda.runtime.memsetAsync(array.data.ptr, byte, array.nbytes, self.stream.ptr)

    def synchronize(self) -> None:
        try:
            self.stream.synchronize()  # raises the error of any failed launch before it
        except _CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def run(self, call: Callable[[], None]) -> None:
        """Run a call (launches, library calls) on the backend's stream."""
        call()

    def _hold(self, us: float = SPIN_US) -> Callable[[], None]:
        """A launch that keeps the GPU busy for about `us` (at the highest SM clock)."""
        if self._spin is None:
            clock_khz = cp.cuda.runtime.deviceGetAttribute(13, self.device.id)  # ClockRate
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
        self.synchronize()
        return host

    def _flusher(self) -> Callable[[], None]:
        """A launch that reads twice the L2 size, so nothing of the input survives in L2."""
        if self._flush is None:
            info = self.device_info()
            buffer = cp.zeros(2 * info.l2_bytes // 4, dtype=cp.float32)
            sink = cp.zeros(1, dtype=cp.float32)
            kernel = cp.RawKernel(_FLUSH_SOURCE, "cudabench_flush")
            grid, count = (info.sm_count * FLUSH_BLOCKS_PER_SM,), np.int64(buffer.size // 4)
            self._flush = lambda: kernel(grid, (256,), (buffer, count, sink))
        return self._flush

    def copy(self, dst: Any, src: Any) -> None:
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, src.nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice, self.stream.ptr)  # fmt: skip

    def sampler(self, call: Callable[[], None], batch: int, cold: bool,
                scope: Scope = contextlib.nullcontext,
                reset: Callable[[], None] | None = None,
                kernel_clock: bool = False) -> _Sampler:  # fmt: skip
        sampler = self._sampler(call, batch, cold, scope, reset)
        if kernel_clock:
            from cudabench.backends import cupti

            sampler.clock = cupti.collector()
        return sampler

    def _sampler(self, call: Callable[[], None], batch: int, cold: bool, scope: Scope,
                 reset: Callable[[], None] | None) -> _Sampler:  # fmt: skip
        if cold or batch == 1:
            if reset is not None:
                reset()
            spin_us = max(SPIN_US, SPIN_PER_HOST * self._host_us(call))  # one untimed call
            steps = sample_steps(cold, single=True, slow_caller=spin_us > SPIN_US,
                                 reset=reset is not None)  # fmt: skip
            actions: dict[str, Callable[[], None]] = {RESET: reset or (lambda: None)}
            if SPIN in steps:
                actions[SPIN] = self._hold(spin_us)
            if cold:  # the flush holds the GPU too; a slow caller also spins after it
                actions[FLUSH] = self._flusher()
            return _Sampler(self, call, 1, "single", scope, before=self._steps(steps, actions))
        try:
            self.stream.begin_capture()
            try:
                for _ in range(batch):
                    call()
            finally:
                graph = self.stream.end_capture()
            graph.upload(self.stream)
            steps = sample_steps(False, single=False, reset=reset is not None)
            return _Sampler(self, call, batch, "graph", scope, graph=graph,
                            before=self._steps(steps, {RESET: reset or (lambda: None)}))
        except _CUDA_ERRORS as exc:
            if "Capture" not in str(exc) and "capture" not in str(exc):
                raise crash_from(exc) from exc
            # a library call that cannot be captured (e.g. torch allocating, or syncing):
            # the capture failed, not the kernel; time it from a Python loop instead
        except Exception:  # a call that cannot be captured (e.g. it synchronizes)
            pass
        self.synchronize()
        steps = sample_steps(False, single=False, reset=reset is not None)
        return _Sampler(self, call, batch, "loop", scope,
                        before=self._steps(steps, {RESET: reset or (lambda: None)}))

    def _steps(self, steps: tuple[str, ...],
               actions: dict[str, Callable[[], None]]) -> Callable[[], None]:  # fmt: skip
        """The untimed part of a sample: each step before the launch, in order, recorded in
        `step_log` when one is set (the launch records itself). A step without an action is
        a bug (KeyError), never silently skipped."""
        before = [(name, actions[name]) for name in steps if name != LAUNCH]

        def run() -> None:
            log = self.step_log
            if log is not None:
                log.begin()
            for name, action in before:
                action()
                if log is not None:
                    log.step(name)

        return run


class _Sampler:
    """One timed sample: `before` (the L2 flush, or the spin that hides launch overhead),
    then the start event, the graph or the calls, the end event. With the kernel clock
    (`clock`, a CuptiCollector) the launches also run under the sample's external
    correlation id, and `launch_times()` reads them back from CUPTI's records."""

    def __init__(self, backend: CupyBackend, call: Callable[[], None], batch: int, method: str,
                 scope: Scope, graph: Any = None,
                 before: Callable[[], None] | None = None) -> None:  # fmt: skip
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
            return cp.cuda.get_elapsed_time(self.start, self.end) / self.batch
        except _CUDA_ERRORS as exc:
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
        except _CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def launch_times(self) -> list[LaunchTime]:
        self.backend.synchronize()
        kernels, external = self.clock.records()
        return launch_times(kernels, external, self.taken)
