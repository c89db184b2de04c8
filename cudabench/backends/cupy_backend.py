"""The GPU backend: CuPy for device memory, module loading, launches, events and graphs.

How a sample is timed (graphs, single launches behind a spin, cold samples behind an L2
flush) is cupy_timing.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

try:
    import cupy as cp
except ImportError as exc:  # pragma: no cover - depends on the machine
    from cudabench.backends.base import BackendUnavailable

    raise BackendUnavailable(
        "CuPy is not installed: pip install -e '.[cuda13]' (or '.[cuda12]'), see README, 'Install'"
    ) from exc

from cudabench.backends.base import BackendUnavailable, Loaded, Scope, StepLog
from cudabench.backends.cupti_clock import KernelClockUnavailable
from cudabench.backends.cupy_timing import CUDA_ERRORS, Sampler, Samplers, crash_from
from cudabench.backends.driver import NO_DRIVER, driver_present
from cudabench.backends.nvml import Gauge, open_gauge, with_facts
from cudabench.build.compile import compile_variant
from cudabench.core.records import DeviceInfo, KernelVariant
from cudabench.ops.protocol import dims

_EMPTY_SOURCE = 'extern "C" __global__ void cudabench_empty() {}'


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


def no_gpu_reason(exc: BaseException) -> str:
    """One line for a runtime that cannot start: no driver at all reads differently from a
    driver that is too old (CUDA says "insufficient" for both)."""
    text = str(exc)
    if "InsufficientDriver" in text and not driver_present():
        return NO_DRIVER
    if "InsufficientDriver" in text:
        return (
            f"the NVIDIA driver is older than CUDA {cp.cuda.runtime.runtimeGetVersion()} "
            "(this CuPy's runtime) needs: update the driver or install the CuPy of an "
            "older CUDA (see README, 'Install')"
        )
    if "NoDevice" in text:
        return "no CUDA GPU found (the driver is loaded but sees no device)"
    return f"no usable CUDA GPU or driver: {text}"


class CupyBackend:
    name = "cupy"

    def __init__(self, device: int = 0) -> None:
        try:
            count = cp.cuda.runtime.getDeviceCount()
        except CUDA_ERRORS as exc:
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
        # CuPy imports cupyx (and with it SciPy's sparse module) lazily, on the first call that
        # asks for it: 0.4 s of Python on an H200 machine. Here it is part of the process's
        # start, like CuPy's own import, not of its first row's set-up (tune: each worker's
        # first configuration, 0.5 s against 1 ms for the next)
        import cupyx  # noqa: F401

        self._info: DeviceInfo | None = None
        self.samplers = Samplers(self)  # cupy_timing.py: graphs, spins, L2 flushes
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
        empty: Callable[[], None] = self._empty
        return empty

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
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.kernel.ptr, block, 0))

    def launch(
        self, function: Any, grid: Any, block: Any, args: tuple[Any, ...], shared_bytes: int = 0
    ) -> None:
        try:  # on the current stream: self.stream
            opted = self._opted.get(id(function), (None, 0))[1]
            if shared_bytes > opted:
                # a block's static and dynamic shared memory above 48 KiB needs the kernel's
                # opt-in to the dynamic part: given whenever a launch asks more than before
                function.max_dynamic_shared_size_bytes = shared_bytes
                self._opted[id(function)] = (function, shared_bytes)
            function(dims(grid), dims(block), args, shared_mem=shared_bytes)
        except CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def fill_bytes(self, array: Any, byte: int) -> None:
        cp.cuda.runtime.memsetAsync(array.data.ptr, byte, array.nbytes, self.stream.ptr)

    def synchronize(self) -> None:
        try:
            self.stream.synchronize()  # raises the error of any failed launch before it
        except CUDA_ERRORS as exc:
            raise crash_from(exc) from exc

    def run(self, call: Callable[[], None]) -> None:
        """Run a call (launches, library calls) on the backend's stream."""
        call()

    def copy(self, dst: Any, src: Any) -> None:
        cp.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, src.nbytes, cp.cuda.runtime.memcpyDeviceToDevice, self.stream.ptr
        )

    def sampler(
        self,
        call: Callable[[], None],
        batch: int,
        cold: bool,
        scope: Scope = contextlib.nullcontext,
        reset: Callable[[], None] | None = None,
        kernel_clock: bool = False,
    ) -> Sampler:
        sampler = self.samplers.make(call, batch, cold, scope, reset)
        if kernel_clock:
            from cudabench.backends import cupti

            sampler.clock = cupti.collector()
        return sampler
