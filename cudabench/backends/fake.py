"""A backend with no GPU: NumPy arrays, Python stand-ins for kernels, and a scripted clock.

It lets the whole pipeline (CLI, runner, measure, results, tables) run in tests and on CI,
for any op, a user's included. The kernels it launches are backends/fake_kernels.py's: each
variant that "compiles" computes its op's float64 reference, but for the planted faults.
Tests may pass `kernels` (entry -> stand-in) instead: then only those exist.
$CUDABENCH_FAKE_MEMORY (bytes) sets the fake card's memory.
Each sample's time comes from `clock(entry_or_call_name)` in ms, by default a fixed time per
built-in entry. Nothing here is a measurement: the fake exists to test the plumbing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.backends.base import (
    FLUSH,
    RESET,
    Loaded,
    Scope,
    StepLog,
    sample_steps,
)
from cudabench.backends.cupti_clock import KernelRecord, LaunchTime, launch_times
from cudabench.backends.fake_kernels import (
    FAULTS,
    PLANT_KINDS,
    FakeKernel,
    compiles,
    dims_of_args,
    emulator,
    garbage,
    plantings,
)
from cudabench.backends.fake_nvml import FakeGauge
from cudabench.backends.nvml import with_facts
from cudabench.build.nvcc import CompileError
from cudabench.core.records import DeviceInfo, KernelVariant

FAKE_TIMES_MS = {
    "reduce_sum_naive": 0.9,
    "reduce_sum_shared": 0.12,
    "reduce_sum_shuffle": 0.1,
    "reduce_sum_float4": 0.06,
    "reduce_sum_atomic": 0.07,
    "empty": 0.002,
}
# The fake kernel clock: a launch's kernels take this share of its scripted (event) time,
# split evenly among them with a gap of FAKE_GAP_NS between kernels; a flush kernel that no
# sample owns runs before each cold sample. Plumbing for tests, not a model of a GPU.
FAKE_KERNEL_SHARE = 0.9
FAKE_GAP_NS = 500
FAKE_DEVICE = DeviceInfo(
    name="Fake GPU (no hardware)",
    compute_capability="9.0",
    sm_count=132,
    memory_clock_mhz=3201.0,
    bus_width_bits=6016,
    l2_bytes=60 << 20,
    total_memory_bytes=140 << 30,
    driver_version="0.0",
    runtime_version="0.0",
    sm_clock_mhz=1980.0,
)


# The ceilings on the fake (calibration.py): it never measures them on its own (a run on it
# without kept ceilings has no `% ceiling` column, and says why); `cudabench ceilings` measures
# them only over arrays this small (8x its L2: CUDABENCH_FAKE_L2 of 512 KiB or less), which it
# emulates in seconds, where the default 60 MiB L2 would have it compute references over
# 500 MB arrays for every launch.
FAKE_CEILINGS_MAX_ELEMENTS = 1 << 20


def is_fake(device: DeviceInfo) -> bool:
    """Whether a GPU is the fake backend's (whichever process or cluster reported it)."""
    return device.name == FAKE_DEVICE.name


class _Function:
    def __init__(self, entry: str, kernel: FakeKernel) -> None:
        self.entry, self.kernel = entry, kernel


class FakeBackend:
    name = "fake"
    xp = np
    # its sample times are scripted, not measured: the stopping rule stops at min_samples
    # (measure/sampling.sampling_options), whatever minimum GPU time the run asks for
    scripted_clock = True

    def __init__(
        self,
        kernels: dict[str, FakeKernel] | None = None,
        clock: Callable[[str], float] | None = None,
        free_bytes: int = 100 << 30,
        devices: int = 1,
        gauge: FakeGauge | None | bool = True,
        kernel_clock: bool | None = None,
    ) -> None:
        # the parent-bound channel of the worker that opened this backend (worker.serve
        # hands it over): where the planted garbage fault writes; None outside a worker
        self.channel: Any = None
        self.step_log: StepLog | None = None  # tests: the steps each sample ran
        self.flushes = 0  # L2 flushes of cold samples, for tests
        self.kernels = kernels  # None: every op emulated through its reference, and the faults
        # $CUDABENCH_FAKE_L2 (bytes): a smaller L2, so that the ceilings' arrays (8x it) stay small
        l2 = os.environ.get("CUDABENCH_FAKE_L2", "")
        self.device = dataclasses.replace(FAKE_DEVICE, l2_bytes=int(l2)) if l2.isdigit() else FAKE_DEVICE
        # $CUDABENCH_FAKE_MEMORY (bytes): the card's memory, all of it free (verify's tests)
        memory = os.environ.get("CUDABENCH_FAKE_MEMORY", "")
        if memory.isdigit():
            self.device = dataclasses.replace(self.device, total_memory_bytes=int(memory))
            free_bytes = int(memory)
        self._devices = devices
        # the fake NVML (True: a steady one; None: a GPU without NVML)
        self._gauge = FakeGauge() if gauge is True else (gauge or None)
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
        return with_facts(self.device, self._gauge)

    def versions(self) -> dict[str, str]:
        return {"numpy": np.__version__}

    def free_bytes(self) -> int:
        return self._free

    def activate(self) -> None:
        self.activations += 1  # NumPy has no device or stream: counted, for tests

    def device_count(self) -> int:
        return self._devices

    def gauge(self) -> FakeGauge | None:
        return self._gauge

    def _busy(self, ms: float) -> None:
        """GPU work as the fake NVML sees it: time, energy and heat pass."""
        if self._gauge is not None:
            self._gauge.advance(ms / 1e3)

    def empty_call(self) -> Callable[[], None]:
        def empty() -> None:
            self._last = "empty"

        return empty

    def load(self, variant: KernelVariant, dtype: str = "float32") -> Loaded:
        if dtype not in variant.dtypes:
            raise CompileError(f"{variant.path}: not declared for {dtype}")
        if self.kernels is not None:
            missing = [e for e in variant.entries if e not in self.kernels]
            kernels = [self.kernels[e] for e in variant.entries if not missing]
        else:
            missing = [e for e in variant.entries if not compiles(e, variant.path)]
            kernels = [self._stand_in(variant, e) for e in variant.entries if not missing]
        if missing:
            raise CompileError(f"{variant.path}: fake backend has no kernel for {missing}")
        functions = tuple(_Function(e, k) for e, k in zip(variant.entries, kernels))
        occupancy = tuple(FAKE_DEVICE.max_threads_per_sm // launch.block for launch in variant.launches)
        return Loaded(functions, occupancy, registers=32, spill_bytes=0)

    def _stand_in(self, variant: KernelVariant, entry: str) -> FakeKernel:
        """A fault by its entry name, else the variant's op emulated (its op found when the
        first launch runs: a fault that never writes needs no op), one emulator a variant."""
        from cudabench.core.names import UnknownName
        from cudabench.ops.registry import get_op

        made: list[FakeKernel] = []

        def emulate(grid: Any, block: Any, *args: Any) -> Any:
            if not made:
                try:
                    op = get_op(variant.op)
                except UnknownName as exc:
                    raise CompileError(f"{variant.path}: the fake backend cannot emulate: {exc}") from None
                made.append(emulator(op))
            return made[0](grid, block, *args)

        fault = FAULTS.get(entry.split("<")[0].strip())
        if fault is garbage:  # it writes on the channel the worker handed this backend
            return functools.partial(garbage, emulate, channel=self.channel)
        kernel = functools.partial(fault, emulate) if fault is not None else emulate
        planted = [p for p in plantings() if p.variant in (variant.name, "*")]
        if not planted:
            return kernel

        def at_some_shapes(grid: Any, block: Any, *args: Any) -> Any:
            dims = dims_of_args(get_op(variant.op), args)
            hit = next((p for p in planted if p.holds(dims)), None)
            if hit is None:
                return kernel(grid, block, *args)
            return PLANT_KINDS[hit.kind](emulate, grid, block, *args)

        return at_some_shapes

    def launch(
        self, function: _Function, grid: Any, block: Any, args: tuple[Any, ...], shared_bytes: int = 0
    ) -> None:
        self._last = function.entry
        self.last_launch = (function.entry, grid, block)  # a test's clock may depend on it
        self.launched.append(function.entry)
        function.kernel(grid, block, *args)

    def run(self, call: Callable[[], None]) -> None:
        self._last = "baseline"
        call()
        self._busy(self.clock(self._last))

    def fill_bytes(self, array: Any, byte: int) -> None:
        array.view(np.uint8)[...] = byte

    def synchronize(self) -> None:
        pass

    def copy(self, dst: Any, src: Any) -> None:
        dst.reshape(-1).view(np.uint8)[...] = src.reshape(-1).view(np.uint8)

    def sampler(
        self,
        call: Callable[[], None],
        batch: int,
        cold: bool,
        scope: Scope = contextlib.nullcontext,
        reset: Callable[[], None] | None = None,
        kernel_clock: bool = False,
    ) -> _FakeSampler:
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
    def __init__(
        self,
        backend: FakeBackend,
        call: Callable[[], None],
        batch: int,
        scope: Scope,
        reset: Callable[[], None] | None = None,
        kernel_clock: bool = False,
        cold: bool = False,
    ) -> None:
        self.backend, self.call, self.batch, self.scope = backend, call, batch, scope
        self.reset, self.kernel_clock, self.cold = reset, kernel_clock, cold
        self.method = "single" if batch == 1 else "graph"
        self.taken: list[tuple[int, int]] = []

    def __call__(self) -> float:
        """One sample, built from base.sample_steps as the CuPy backend's are: reset, the
        flush (cold: counted in `backend.flushes`, and under the kernel clock a kernel record
        of no sample's), the spin (nothing to hold here), then the call."""
        backend = self.backend
        log = backend.step_log
        if log is not None:
            log.begin()
        backend._last = "baseline"
        before = len(backend.launched)
        flushed = False
        for step in sample_steps(self.cold, single=self.batch == 1, reset=self.reset is not None):
            if step == RESET and self.reset is not None:
                self.reset()
            elif step == FLUSH:
                backend.flushes += 1
                flushed = True
            if log is not None:
                log.step(step)
        with self.scope():
            # once: the result is the same, and tests stay fast; but an in-place op's graph
            # applies the call `batch` times to its input, as a GPU's would
            for _ in range(self.batch if self.reset is not None else 1):
                self.call()
        ms = backend.clock(backend._last)
        backend._busy(ms * self.batch)
        if self.kernel_clock:
            if flushed:
                backend.emit(None, 1, 1, 0.05)  # the L2 flush: no sample's
            backend._samples += 1
            sample_id = backend._samples
            self.taken.append((sample_id, self.batch))
            backend.emit(sample_id, max(1, len(backend.launched) - before), self.batch, ms)
        return ms

    def enqueue(self) -> _Done:
        """One replay, run at once (the fake GPU is never behind): time and energy pass."""
        self.backend._last = "baseline"
        with self.scope():
            self.call()
        self.backend._busy(self.backend.clock(self.backend._last) * self.batch)
        return _Done()

    def launch_times(self) -> list[LaunchTime]:
        return launch_times(self.backend.records, self.backend.external, self.taken)


class _Done:
    done = True
