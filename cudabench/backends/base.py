"""The small interface every backend implements (after Kernel Tuner's interchangeable
backends): load a variant, allocate, launch, and take timed samples."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from cudabench.backends.cupti_clock import LaunchTime
from cudabench.backends.nvml import Gauge
from cudabench.core.records import DeviceInfo, KernelVariant

# The most launches one sample's graph (or loop) holds: measure.py's batches and the energy
# window's replays (telemetry.py).
MAX_BATCH = 1000

# Entered around each timed launch (the runner's NVTX ranges), and around nothing else.
Scope = Callable[[], AbstractContextManager[Any]]


# The steps of one timed sample, in the order they run. The untimed preparation comes first:
# RESET (the input restored for an in-place kernel), FLUSH (cold: L2 emptied of the input),
# SPIN (the GPU held busy so that the events bracket the launches alone); then LAUNCH, the
# timed calls between the events.
RESET, FLUSH, SPIN, LAUNCH = "reset", "flush", "spin", "launch"


def sample_steps(cold: bool, single: bool, slow_caller: bool = False, reset: bool = False) -> tuple[str, ...]:
    """What a sample runs, by the timing mode: a cold sample flushes L2 before its launch
    (the flush also holds the GPU; a slow caller spins after it as well), a hot single
    launch spins first, a hot batch (a graph or a loop) launches at once. Every backend
    builds its samples from this, and records the steps it ran in a StepLog when given one:
    the seam tests observe (a cold sample whose flush was dropped shows no FLUSH)."""
    steps = [RESET] if reset else []
    if cold:
        steps += [FLUSH, SPIN] if slow_caller else [FLUSH]
    elif single:
        steps.append(SPIN)
    return (*steps, LAUNCH)


class StepLog:
    """The steps each timed sample ran (`Backend.step_log`, None by default): one list a
    sample, as `sample_steps` names them. For tests; the backends record when it is set."""

    def __init__(self) -> None:
        self.samples: list[list[str]] = []

    def begin(self) -> None:
        self.samples.append([])

    def step(self, name: str) -> None:
        if not self.samples:
            self.begin()
        self.samples[-1].append(name)


class BackendUnavailable(RuntimeError):
    """No usable GPU, driver or CuPy; the message is the one line the user sees."""


class KernelCrash(RuntimeError):
    """A launch failed with a device error (illegal address, trap, launch failure...)."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name


@dataclass(frozen=True)
class Loaded:
    """A compiled variant ready to launch: one function per launch, and its resources."""

    functions: tuple[Any, ...]
    blocks_per_sm: tuple[int, ...]  # occupancy of each launch at its block size (0: no fit)
    registers: int | None
    spill_bytes: int | None


class Pending(Protocol):
    """A queued replay (Sampler.enqueue): `done` once the GPU has run it."""

    @property
    def done(self) -> bool: ...


class Sampler(Protocol):
    batch: int
    method: str  # "graph", "loop" or "single"

    def __call__(self) -> float:
        """Run one sample; return the time of one launch in ms (sample time / batch), by
        CUDA events."""

    def enqueue(self) -> Pending:
        """Queue one replay of the `batch` launches without timing or waiting for it (the
        energy window keeps the GPU busy this way while it reads the energy counter)."""

    def launch_times(self) -> list[LaunchTime]:
        """A kernel-clock sampler (`sampler(..., kernel_clock=True)`): every launch of the
        samples taken so far, from CUPTI's records (RecordsMissing if they do not add up)."""


class Backend(Protocol):
    name: str

    @property
    def xp(self) -> Any:
        """The array module: cupy or numpy (a read-only member: FakeBackend's is `xp = np`)."""

    # A backend may also have `step_log: StepLog | None`: when set, each sample records the
    # steps it ran (sample_steps); tests set it to observe, e.g., a cold sample's flush. And
    # `scripted_clock: bool`: its sample times are scripted, not measured (the fake's), so the
    # stopping rule needs no minimum GPU time (sampling.sampling_options).

    def device_info(self) -> DeviceInfo: ...

    def versions(self) -> dict[str, str]:
        """Library versions for the run's metadata (e.g. {'cupy': '14.2.0'})."""

    def free_bytes(self) -> int: ...

    def activate(self) -> None:
        """Make this backend's device and stream current again: another backend made in the
        same thread (cudabench.timeit, a second Runner) takes them, and the array library's
        own work (inputs, references, checks) must stay ordered with this one's launches."""

    def load(self, variant: KernelVariant, dtype: str = "float32") -> Loaded:
        """Compile (cached) for `dtype` and load; raises compile.CompileError."""

    def launch(
        self, function: Any, grid: Any, block: Any, args: tuple[Any, ...], shared_bytes: int = 0
    ) -> None:
        """Launch on the backend's stream; grid and block are ints or (x, y[, z]) tuples,
        shared_bytes the dynamic shared memory."""

    def run(self, call: Callable[[], None]) -> None:
        """Run a call (launches or library calls) on the backend's stream."""

    def fill_bytes(self, array: Any, byte: int) -> None:
        """memset: 0 for zero init, 0xFF for the NaN poison (no kernel launch)."""

    def synchronize(self) -> None:
        """Wait for the device; raises KernelCrash if a launch failed."""

    def device_count(self) -> int:
        """How many GPUs this backend can see (for `--devices all`)."""

    def gauge(self) -> Gauge | None:
        """The GPU's own gauges (NVML: energy, power, clocks, temperature, slowdowns), opened
        once; None where NVML is missing or does not see the GPU."""

    def empty_call(self) -> Callable[[], None]:
        """A call that launches an empty kernel: the launch floor is its time."""

    def copy(self, dst: Any, src: Any) -> None:
        """Device-to-device copy of src's bytes into dst (no kernel launch)."""

    def sampler(
        self,
        call: Callable[[], None],
        batch: int,
        cold: bool,
        scope: Scope,
        reset: Callable[[], None] | None = None,
        kernel_clock: bool = False,
    ) -> Sampler:
        """Prepare timed samples of `call` repeated `batch` times (cold: L2 flushed first);
        the launches, and only they, run inside `scope()`; `reset()` runs before every
        sample, untimed. `kernel_clock`: the launches are also tagged for the kernel clock
        (inside `kernel_clock()`'s session), so `launch_times()` can tell them apart."""

    def kernel_clock_error(self) -> str:
        """Why the kernel clock (CUPTI) cannot run here; '' when it can. Probed once."""

    def kernel_clock(self) -> AbstractContextManager[Any]:
        """The kernel clock's session: kernel records are collected while inside (it is
        entered before the sampler is made, so a graph's kernel nodes are traced)."""
