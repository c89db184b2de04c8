"""A backend with no GPU: NumPy arrays, Python stand-ins for kernels, and a scripted clock.

It lets the whole pipeline (CLI, runner, measure, results, tables) run in tests and on CI.
Kernels are looked up by entry name in `kernels` (default: `EMULATED`, stand-ins for the
built-in kernels); an entry it does not know fails to "compile". Each sample's time comes
from `clock(entry_or_call_name)` in ms, by default a fixed time per built-in entry.
Nothing here is a measurement: the fake exists to test the plumbing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.backends.base import KernelCrash, Loaded, Scope
from cudabench.compile import CompileError
from cudabench.cupti_clock import KernelRecord, LaunchTime, launch_times
from cudabench.spec import Clocks, DeviceInfo, KernelVariant

FakeKernel = Callable[..., None]  # called as kernel(grid, block, *args)


def _row_sum(grid: int, block: int, x: Any, out: Any, *rest: Any) -> None:
    out += x.sum(axis=-1, dtype=np.float32)  # `+=`: the zero-init variants start from 0


def _row_sum_store(grid: int, block: int, x: Any, out: Any, *rest: Any) -> None:
    out[...] = x.sum(axis=-1, dtype=np.float32)


def _row_max(grid: Any, block: Any, x: Any, out: Any, *rest: Any) -> None:
    out[...] = x.reshape(out.shape[0], -1).max(axis=-1)


def _add(grid: Any, block: Any, a: Any, b: Any, out: Any, n: Any) -> None:
    out[...] = _f(a) + _f(b)


# Like the real kernels, the stand-ins compute in float32 (`_f`) and round once on the store.
def _f(x: Any) -> Any:
    return x.astype(np.float32)


def _sigmoid(grid: Any, block: Any, x: Any, out: Any, n: Any) -> None:
    out[...] = 1 / (1 + np.exp(-_f(x)))


def _relu(grid: Any, block: Any, x: Any, out: Any, n: Any) -> None:
    out[...] = np.maximum(x, np.float32(0))


def _scale(grid: Any, block: Any, x: Any, rows: Any, cols: Any) -> None:
    view = x.reshape(int(rows), int(cols))
    view[...] = _f(view) / np.abs(_f(view)).max(axis=1, keepdims=True)


def _softmax(grid: Any, block: Any, x: Any, out: Any, partials: Any, rows: Any, cols: Any,
             chunks: Any) -> None:  # fmt: skip
    view = _f(x).reshape(int(rows), int(cols))
    e = np.exp(view - view.max(axis=1, keepdims=True))
    out[...] = (e / e.sum(axis=1, keepdims=True)).reshape(out.shape)


def _nothing(grid: Any, block: Any, *args: Any) -> None:  # a multi-kernel variant's first steps
    pass


def _transpose(grid: Any, block: Any, x: Any, out: Any, m: Any, n: Any) -> None:
    out[...] = x.T


def _gemv(grid: Any, block: Any, a: Any, x: Any, y: Any, m: Any, k: Any) -> None:
    y[...] = _f(a) @ _f(x)


def _sgemm(grid: Any, block: Any, a: Any, b: Any, c: Any, m: Any, n: Any, k: Any) -> None:
    c[...] = a @ b


def _stream_read(grid: Any, block: Any, a: Any, b: Any, out: Any, n: Any) -> None:
    out += np.float32(_f(a).sum())  # the kernel adds its blocks' sums into a zeroed out


def _stream_write(grid: Any, block: Any, a: Any, b: Any, out: Any, n: Any) -> None:
    out[...] = 0


def _stream_copy(grid: Any, block: Any, a: Any, b: Any, out: Any, n: Any) -> None:
    out[...] = a


def _stream_triad(grid: Any, block: Any, a: Any, b: Any, out: Any, n: Any) -> None:
    out[...] = _f(a) + np.float32(3) * _f(b)


def _fma_chain(grid: Any, block: Any, x: Any, out: Any, n: Any, iters: Any, one: Any,
               step: Any) -> None:  # fmt: skip
    out[...] = x + np.float32(int(iters) * float(step))


EMULATED: dict[str, FakeKernel] = {
    **{f"reduce_scale_{v}": _scale for v in ("block", "warp", "block_cached")},
    **{f"softmax_{v}": _softmax for v in ("warp_xor", "warp_down", "block_smem",
                                          "block_uncached", "block_reg", "cluster",
                                          "block_hybrid")},
    "softmax_1d_max": _nothing, "softmax_1d_sum": _nothing, "softmax_1d_norm": _softmax,
    "softmax_1d_online_stats": _nothing, "softmax_1d_online_norm": _softmax,
    "softmax_1d_vec_stats": _nothing, "softmax_1d_vec_norm": _softmax,
    "softmax_1d_tile_stats": _nothing, "softmax_1d_tile_norm": _softmax,
    **{f"transpose_{v}": _transpose for v in ("naive", "ldg", "smem", "smem64", "vec")},
    "gemv_warp": _gemv, "gemv_vec4": _gemv,
    **{f"sgemm_{v}": _sgemm for v in ("naive", "smem", "tile128", "warptile")},
    "add_naive": _add, "add_float4": _add, "sigmoid_naive": _sigmoid,
    "sigmoid_float4": _sigmoid, "relu_naive": _relu, "relu_float4": _relu,
    "reduce_max_x4": _row_max, "reduce_max_atomic": _row_max, "reduce_max_shuffle": _row_max,
    "reduce_sum_naive": _row_sum,
    "reduce_sum_atomic": _row_sum_store,
    "reduce_sum_shared": _row_sum_store,
    "reduce_sum_shuffle": _row_sum_store,
    "reduce_sum_float4": _row_sum_store,
    "stream_read_vec4": _stream_read, "stream_write_vec4": _stream_write,
    "stream_copy_vec4": _stream_copy, "stream_triad_vec4": _stream_triad,
    "stream_write_tile": _stream_write, "stream_copy_tile": _stream_copy,
    "stream_triad_tile": _stream_triad, "fma_chain": _fma_chain,
}
def _crash(grid: int, block: int, *args: Any) -> None:
    raise KernelCrash("cudaErrorIllegalAddress", "an illegal memory access was encountered")


def _die(grid: int, block: int, *args: Any) -> None:
    os._exit(9)  # the process vanishes, as with a segfault in a driver


def _hang(grid: int, block: int, *args: Any) -> None:
    time.sleep(3600)


def _garbage(grid: int, block: int, *args: Any) -> None:
    from cudabench import worker

    if worker.CHANNEL is not None:  # bytes that are not a message, on the worker's channel
        worker.CHANNEL.send_bytes(b"\x80not a pickle")
    _row_sum_store(grid, block, *args)


def _kill_node(grid: int, block: int, *args: Any) -> None:
    """The first time (no file at $CUDABENCH_FAKE_KILL_ONCE yet), or every time with
    $CUDABENCH_FAKE_KILL_ALWAYS: kill the process that started this worker (on a Dask
    cluster, the Dask worker: a node lost mid-task), then this worker with it. Later: a
    correct row sum."""
    marker = os.environ.get("CUDABENCH_FAKE_KILL_ONCE", "")
    if os.environ.get("CUDABENCH_FAKE_KILL_ALWAYS") or (marker and not os.path.exists(marker)):
        if marker:
            open(marker, "w").close()
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(9)
    _row_sum_store(grid, block, *args)


# Faults for the worker tests (a .cu header naming these entries gets them): a CUDA error,
# a process that dies, a kernel that never returns, a worker that sends garbage, a lost node.
FAULTS: dict[str, FakeKernel] = {
    "fake_crash": _crash, "fake_die": _die, "fake_hang": _hang, "fake_garbage": _garbage,
    "fake_kill_node": _kill_node,
}  # fmt: skip
FAKE_TIMES_MS = {
    "reduce_sum_naive": 0.9, "reduce_sum_shared": 0.12, "reduce_sum_shuffle": 0.1,
    "reduce_sum_float4": 0.06, "reduce_sum_atomic": 0.07, "empty": 0.002,
}  # fmt: skip
FAKE_CLOCKS = Clocks(sm_mhz=1980, mem_mhz=3201)
# The fake kernel clock: a launch's kernels take this share of its scripted (event) time,
# split evenly among them with a gap of FAKE_GAP_NS between kernels; a flush kernel that no
# sample owns runs before each cold sample. Plumbing for tests, not a model of a GPU.
FAKE_KERNEL_SHARE = 0.9
FAKE_GAP_NS = 500
FAKE_DEVICE = DeviceInfo(
    name="Fake GPU (no hardware)", compute_capability="9.0", sm_count=132,
    memory_clock_mhz=3201.0, bus_width_bits=6016, l2_bytes=60 << 20,
    total_memory_bytes=140 << 30, driver_version="0.0", runtime_version="0.0",
    sm_clock_mhz=1980.0,
)  # fmt: skip


class _Function:
    def __init__(self, entry: str, kernel: FakeKernel) -> None:
        self.entry, self.kernel = entry, kernel


class FakeBackend:
    name = "fake"
    xp = np

    def __init__(self, kernels: dict[str, FakeKernel] | None = None,
                 clock: Callable[[str], float] | None = None,
                 free_bytes: int = 100 << 30, devices: int = 1,
                 clocks: Callable[[], Clocks | None] = lambda: FAKE_CLOCKS,
                 kernel_clock: bool | None = None) -> None:  # fmt: skip
        self.kernels = {**EMULATED, **FAULTS} if kernels is None else kernels
        # $CUDABENCH_FAKE_L2 (bytes): a smaller L2, so that the ceilings' arrays (8x it) stay small
        l2 = os.environ.get("CUDABENCH_FAKE_L2", "")
        self.device = dataclasses.replace(FAKE_DEVICE, l2_bytes=int(l2)) if l2.isdigit() else FAKE_DEVICE
        self._devices, self._clocks = devices, clocks
        self.clock = clock or (lambda name: FAKE_TIMES_MS.get(name, 0.1))
        self._free = free_bytes
        self._last = "baseline"
        self.launched: list[str] = []  # entry names, in order, for tests
        self.activations = 0
        self.last_launch: tuple[str, Any, Any] = ("", 0, 0)
        # the fake CUPTI, off unless asked for (kernel_clock=True or $CUDABENCH_FAKE_CUPTI=1):
        # then the timer `auto` falls back to events, as on a machine without cupti-python
        if kernel_clock is None:
            kernel_clock = os.environ.get("CUDABENCH_FAKE_CUPTI") == "1"
        self.no_cupti = "" if kernel_clock else "the fake backend emulates no CUPTI"
        self.records: list[KernelRecord] = []
        self.external: dict[int, int] = {}
        self._now_ns = 1_000_000
        self._ids = self._samples = 0

    def device_info(self) -> DeviceInfo:
        return self.device

    def versions(self) -> dict[str, str]:
        return {"numpy": np.__version__}

    def free_bytes(self) -> int:
        return self._free

    def activate(self) -> None:
        self.activations += 1  # NumPy has no device or stream: counted, for tests

    def device_count(self) -> int:
        return self._devices

    def clocks(self) -> Clocks | None:
        return self._clocks()

    def empty_call(self) -> Callable[[], None]:
        def empty() -> None:
            self._last = "empty"

        return empty

    def load(self, variant: KernelVariant, dtype: str = "float32") -> Loaded:
        if dtype not in variant.dtypes:
            raise CompileError(f"{variant.path}: not declared for {dtype}")
        missing = [e for e in variant.entries if e not in self.kernels]
        if missing:
            raise CompileError(f"{variant.path}: fake backend has no kernel for {missing}")
        functions = tuple(_Function(e, self.kernels[e]) for e in variant.entries)
        occupancy = tuple(FAKE_DEVICE.max_threads_per_sm // l.block for l in variant.launches)
        return Loaded(functions, occupancy, registers=32, spill_bytes=0)

    def launch(self, function: _Function, grid: Any, block: Any, args: tuple[Any, ...],
               shared_bytes: int = 0) -> None:  # fmt: skip
        self._last = function.entry
        self.last_launch = (function.entry, grid, block)  # a test's clock may depend on it
        self.launched.append(function.entry)
        function.kernel(grid, block, *args)

    def run(self, call: Callable[[], None]) -> None:
        self._last = "baseline"
        call()

    def fill_bytes(self, array: Any, byte: int) -> None:
        array.view(np.uint8)[...] = byte

    def synchronize(self) -> None:
        pass

    def copy(self, dst: Any, src: Any) -> None:
        dst.reshape(-1).view(np.uint8)[...] = src.reshape(-1).view(np.uint8)

    def sampler(self, call: Callable[[], None], batch: int, cold: bool,
                scope: Scope = contextlib.nullcontext,
                reset: Callable[[], None] | None = None,
                kernel_clock: bool = False) -> "_FakeSampler":  # fmt: skip
        return _FakeSampler(self, call, 1 if cold else batch, scope, reset, kernel_clock, cold)

    def kernel_clock_error(self) -> str:
        return self.no_cupti

    @contextlib.contextmanager
    def kernel_clock(self) -> Any:
        if self.no_cupti:
            raise RuntimeError("the kernel clock was used where it cannot start")
        self.records, self.external = [], {}
        yield

    def emit(self, sample_id: int | None, kernels: int, launches: int, ms: float) -> None:
        """The records CUPTI would write for `launches` launches of `kernels` kernels
        each, under one API call (a graph, or one launch) of sample `sample_id` (None: work
        outside any sample)."""
        self._ids += 1
        if sample_id is not None:
            self.external[self._ids] = sample_id
        each = max(1, int(ms * 1e6 * FAKE_KERNEL_SHARE / kernels))
        for _ in range(launches):
            for _ in range(kernels):
                self.records.append(KernelRecord(self._ids, self._now_ns, self._now_ns + each))
                self._now_ns += each + FAKE_GAP_NS


class _FakeSampler:
    def __init__(self, backend: FakeBackend, call: Callable[[], None], batch: int,
                 scope: Scope, reset: Callable[[], None] | None = None,
                 kernel_clock: bool = False, cold: bool = False) -> None:  # fmt: skip
        self.backend, self.call, self.batch, self.scope = backend, call, batch, scope
        self.reset, self.kernel_clock, self.cold = reset, kernel_clock, cold
        self.method = "single" if batch == 1 else "graph"
        self.taken: list[tuple[int, int]] = []

    def __call__(self) -> float:
        backend = self.backend
        if self.reset is not None:
            self.reset()
        backend._last = "baseline"
        before = len(backend.launched)
        with self.scope():
            self.call()  # once: the result is the same, and tests stay fast
        ms = backend.clock(backend._last)
        if self.kernel_clock:
            if self.cold:
                backend.emit(None, 1, 1, 0.05)  # the L2 flush: no sample's
            backend._samples += 1
            sample_id = backend._samples
            self.taken.append((sample_id, self.batch))
            backend.emit(sample_id, max(1, len(backend.launched) - before), self.batch, ms)
        return ms

    def launch_times(self) -> list[LaunchTime]:
        return launch_times(self.backend.records, self.backend.external, self.taken)
