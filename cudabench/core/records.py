"""Frozen records shared by every module: kernel variants, cases, measurements, result rows,
run metadata. No I/O here, and nothing that needs a GPU.

The data flow (see docs/architecture.md): config or CLI flags -> `Case`s -> discovered
`KernelVariant`s -> compiled and loaded -> validated and timed -> `ResultRow`s + `RunMeta`.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any

from cudabench.core.timing import ProfileMetrics, TimingOptions

Shape = tuple[int, ...]


class Status(str, enum.Enum):
    """What happened to one (case, variant) pair. A failure is a status, never a dropped row."""

    OK = "OK"
    FAIL = "FAIL"  # ran, but the result disagrees with the float64 reference
    COMPILE_ERROR = "COMPILE_ERROR"  # nvcc rejected the file; its message is the row's error
    CRASH = "CRASH"  # the launch raised a CUDA error, or the worker process died
    TIMEOUT = "TIMEOUT"  # the row ran past the time limit; its worker was killed
    N_A = "N/A"  # the variant's header says it cannot serve this shape
    SKIPPED = "SKIPPED"  # not run (e.g. the shape does not fit in GPU memory)
    ERROR = "ERROR"  # anything else that went wrong around the kernel (a bug to report)

    @property
    def is_failure(self) -> bool:
        """Statuses that make `cudabench run` exit 1."""
        return self in (Status.FAIL, Status.COMPILE_ERROR, Status.CRASH, Status.TIMEOUT, Status.ERROR)


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a variant: entry point, block size and the op's named grid rule.
    The entry is a C name (`reduce_sum_float4`) or a template instantiation whose `T` is the
    dtype's C++ type (`ReduceScaleBlockKernel<T, long long>`)."""

    entry: str
    block: int  # threads per block (the value of block_param, when the header names one)
    grid: str
    block_param: str = ""  # `block: BLOCK`: the block size is the tunable parameter BLOCK


@dataclass(frozen=True)
class KernelVariant:
    """One .cu file, parsed from its metadata header, never from Python code; or a Python
    variant (kind "python"), read from its decorator's literal arguments (pyvariants.py)."""

    op: str
    name: str
    path: str
    launches: tuple[Launch, ...]
    about: str
    init: str = "none"  # "zero": the output is zeroed before every launch (atomic variants)
    # named constraints the op knows how to check; a value may name a parameter of the
    # variant (`cols_multiple_of: VEC`): its value in each configuration (`requirements`)
    requires: tuple[tuple[str, int | str], ...] = ()
    source_hash: str = ""
    header_line: int = 1  # where the header starts, for error messages
    dtypes: tuple[str, ...] = ("float32",)  # the element types the file compiles for
    # The tunable space (`params:` in the header): name -> its values, the first the default.
    params: tuple[tuple[str, tuple[int, ...]], ...] = ()
    constraints: tuple[str, ...] = ()  # expressions over the parameter names (space.py)
    # The configuration this variant compiles and runs with: every parameter bound to one
    # value (the defaults until `configured`). They reach nvcc as -DNAME=value and the op's
    # grid rule through `value()`.
    values: tuple[tuple[str, int], ...] = ()
    # "cuda": a .cu file (launches from its header); "python": a function in a .py file of
    # the op's folder (`function` its name, no launches), run by the runner in the worker
    kind: str = "cuda"
    function: str = ""
    # a Python variant's `needs=`: the modules it imports when it runs ("triton", "torch")
    needs: tuple[str, ...] = ()

    @property
    def requirements(self) -> tuple[tuple[str, int], ...]:
        """`requires:` in this configuration: a value naming a parameter (`VEC`) is that
        parameter's value here (`cols_multiple_of: VEC` with VEC=4 -> 4)."""
        values = dict(self.values)
        return tuple(
            (name, value if isinstance(value, int) else values[value]) for name, value in self.requires
        )

    def unmet_on(self, device: DeviceInfo) -> str | None:
        """Why the GPU cannot run this variant (`requires: {min_sm: 90}`), or None."""
        need = dict(self.requirements).get("min_sm", 0)
        have = device.sm_version
        if need and have < need:
            return f"needs sm_{need} or later (this GPU is sm_{have})"
        return None

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(launch.entry for launch in self.launches)

    @property
    def params_text(self) -> str:
        """The configuration as text, `BLOCK=256,ITEMS=8` ('' for a variant without params)."""
        return params_text(self.values)

    @property
    def label(self) -> str:
        """The name a row, a progress line and an NVTX range show: `float4[BLOCK=256]`."""
        return row_label(self.name, self.params_text)

    def value(self, name: str, default: int) -> int:
        """The configuration's value of a parameter, or `default` if the header has none."""
        return dict(self.values).get(name, default)

    def configured(self, values: dict[str, int]) -> KernelVariant:
        """This variant bound to a configuration (unnamed parameters keep their value), the
        launches' block sizes following a `block:` that names a parameter."""
        merged = {**dict(self.values), **values}
        launches = tuple(
            dataclasses.replace(launch, block=merged[launch.block_param]) if launch.block_param else launch
            for launch in self.launches
        )
        return dataclasses.replace(self, values=tuple(merged.items()), launches=launches)


def params_text(values: tuple[tuple[str, int], ...] | dict[str, int]) -> str:
    items = values.items() if isinstance(values, dict) else values
    return ",".join(f"{name}={value}" for name, value in items)


def row_label(variant: str, params: str) -> str:
    """`float4[BLOCK=256,ITEMS=8]`, or the bare name when there are no parameters."""
    return f"{variant}[{params}]" if params else variant


def parse_params(text: str) -> dict[str, int]:
    """params_text's inverse: `BLOCK=256,ITEMS=8` -> {"BLOCK": 256, "ITEMS": 8}."""
    return {name: int(value) for name, value in (p.split("=", 1) for p in text.split(",") if p)}


def split_label(label: str) -> tuple[str, str]:
    """row_label's inverse: (variant, params). Variant names cannot hold brackets."""
    if label.endswith("]") and "[" in label:
        name, _, rest = label.partition("[")
        return name, rest[:-1]
    return label, ""


@dataclass(frozen=True)
class Case:
    """One problem instance. Its id is stable text, e.g. `442368x128/float32`."""

    op: str
    shape: Shape
    dtype: str = "float32"
    seed: int = 0

    @property
    def shape_text(self) -> str:
        return "x".join(str(d) for d in self.shape)

    @property
    def id(self) -> str:
        return f"{self.shape_text}/{self.dtype}"


@dataclass(frozen=True)
class RowKey:
    """What a row measures: the one identity results files, compare and reports match rows
    by. A new axis of the sweep is a new field here, not a branch in each consumer."""

    op: str
    variant: str
    shape: str
    dtype: str
    params: str = ""  # the configuration, `BLOCK=256,ITEMS=8` ('' for none)

    @property
    def label(self) -> str:
        return row_label(self.variant, self.params)

    def __str__(self) -> str:
        return f"{self.op} {self.label} {self.shape} {self.dtype}"


def join_notes(*notes: str) -> str:
    """A row's notes, several in one field: the non-empty ones joined by "; "."""
    return "; ".join(n for n in notes if n)


@dataclass(frozen=True)
class ResultRow:
    """One flat row per (case, variant), whatever happened to it."""

    op: str
    shape: str
    dtype: str
    variant: str
    status: Status
    params: str = ""  # the configuration it ran with, `BLOCK=256,ITEMS=8` ('' for none)
    error: str = ""
    max_abs_err: float | None = None
    tolerance: float | None = None
    # accuracy: the worst |err| over that of the reference's formula evaluated in float32
    # (and rounded to the dtype); 1 is as accurate as plain float32, blank where unknown
    err_vs_f32: float | None = None
    time_us: float | None = None  # median
    min_us: float | None = None
    spread: float | None = None
    samples: int | None = None
    batch: int | None = None
    method: str | None = None
    gbps: float | None = None  # effective bandwidth: bytes that must move / median time
    gflops: float | None = None  # for compute-bound ops (the op counts the flops)
    pct_peak: float | None = None  # of the theoretical DRAM peak (fp32 peak for GFLOP/s rows)
    speedup: float | None = None  # baseline time / this time
    registers: int | None = None
    spill_bytes: int | None = None
    bytes_moved: int | None = None
    is_baseline: bool = False
    notes: str = ""  # sanity warnings about the figures ("cache-resident: ...")
    ncu: ProfileMetrics | None = None  # Nsight Compute's view of the row (`cudabench profile`)
    device: int | None = None  # the CUDA device index the row ran on
    host: str = ""  # the machine it ran on (a cluster's rows come from several)
    sm_mhz: tuple[int, int] | None = None  # SM clock at the first and last reading of the samples
    mem_mhz: tuple[int, int] | None = None  # memory clock, likewise
    throttle: str = ""  # NVML slowdown reasons seen during the samples (power cap, thermal...)
    # telemetry (telemetry.py), blank where the GPU or driver does not say
    throttled_samples: int | None = None  # samples taken while the card was slowed
    dropped_samples: int | None = None  # of them, left out of the statistics (--drop-throttled)
    sm_mhz_min: int | None = None  # the SM clock over the samples: lowest and median seen
    sm_mhz_median: int | None = None
    temp_c: tuple[int, int] | None = None  # GPU temperature at the start and end of the samples
    energy_mj: float | None = None  # energy per call, millijoules (back-to-back calls, hot)
    power_w: float | None = None  # average board power over the energy window
    gb_per_j: float | None = None  # bytes moved per joule (GB/J); GFLOP/J for compute rows
    gflop_per_j: float | None = None
    settle_s: float | None = None  # warm-up until the SM clock settled (--settle)
    cooldown_s: float | None = None  # waited for the GPU to cool first (--cooldown)
    floor_us: float | None = None  # an empty kernel's time, measured the same way (launch floor)
    timer: str = "events"  # the clock: CUDA events ("events"); CUPTI kernel records ("cupti")
    pct_ceiling: float | None = None  # of what this card can move in the row's mix (ceilings.py)
    kernels_us: float | None = None  # cupti: median of each launch's kernel durations summed
    events_us: float | None = None  # --timer both: the events clock's median, measured just before
    # where the row's own time went, host wall seconds: made a validated call (module load,
    # inputs, float64 reference, tolerance, the check), then timed (warm-up, samples, the
    # check after); a tune search sums them in its summary
    setup_s: float | None = None
    measure_s: float | None = None
    samples_us: tuple[float, ...] = field(default=(), repr=False)

    @classmethod
    def of(cls, case: Case, label: str, status: Status, error: str = "", **fields: Any) -> ResultRow:
        """The row of `label` in `case`: a variant's label (`float4[BLOCK=256]`, split into
        variant and params) or a baseline's name."""
        variant, params = split_label(label)
        return cls(
            op=case.op,
            shape=case.shape_text,
            dtype=case.dtype,
            variant=variant,
            params=params,
            status=status,
            error=error,
            **fields,
        )

    def ran_on(self, device: int | None, host: str | None = None) -> ResultRow:
        """The row stamped with where it ran: the GPU's index (and the machine), the one way
        every executor says it (the worker pool, this process, a Dask worker)."""
        return dataclasses.replace(self, device=device, host=self.host if host is None else host)

    @property
    def key(self) -> RowKey:
        return RowKey(self.op, self.variant, self.shape, self.dtype, self.params)

    @property
    def label(self) -> str:
        return row_label(self.variant, self.params)


@dataclass(frozen=True)
class DeviceInfo:
    """What the run's GPU is, read from its attributes (and NVML where the runtime is silent)."""

    name: str
    compute_capability: str  # "9.0"
    sm_count: int
    memory_clock_mhz: float
    bus_width_bits: int
    l2_bytes: int
    total_memory_bytes: int
    driver_version: str
    runtime_version: str
    max_threads_per_sm: int = 2048
    sm_clock_mhz: float = 0.0  # the highest SM clock (boost)
    # what the card is set to (NVML; '' where it does not say): they move times, so a run's
    # fingerprint holds them
    power_limit_w: str = ""
    ecc: str = ""
    mig: str = ""
    pci_bus_id: str = ""  # NVML finds the GPU by it (CUDA's and NVML's orders can differ)

    @property
    def sm_version(self) -> int:
        """The compute capability as nvcc's arch number: "9.0" -> 90."""
        major, _, minor = self.compute_capability.partition(".")
        return int(major) * 10 + int(minor or 0)

    @property
    def fp32_lanes_per_sm(self) -> int:
        """FP32 units per SM: 64 on sm_60, sm_70/72/75 and sm_80; 128 on the others cudabench
        runs on (sm_61, sm_86/87/89, sm_90 and later)."""
        return 64 if self.compute_capability in ("6.0", "7.0", "7.2", "7.5", "8.0") else 128

    @property
    def fp32_peak_gflops(self) -> float:
        """Theoretical fp32 peak: SMs x FP32 lanes x 2 (an FMA) x the boost clock."""
        return self.sm_count * self.fp32_lanes_per_sm * 2 * self.sm_clock_mhz / 1e3

    @property
    def arch(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")

    @property
    def dram_peak_gbps(self) -> float:
        """Theoretical DRAM peak: 2 transfers a clock (DDR) x memory clock x bus width / 8."""
        return 2 * self.memory_clock_mhz * 1e6 * self.bus_width_bits / 8 / 1e9


@dataclass(frozen=True)
class Ceilings:
    """What one GPU can actually move and compute (`cudabench ceilings`): the best correct
    row of each traffic mix (the stream ops' variants, their library references, and any row
    that moves exactly that mix over arrays of at least the measured size: ceilings.py), the
    fp32 FMA rate, and the launch floor, with the key they hold for (GPU model, driver,
    memory clock)."""

    gpu: str
    driver: str
    memory_clock_mhz: float
    measured: str  # when (ISO 8601, UTC)
    read_gbps: float  # read only
    write_gbps: float  # write only
    copy_gbps: float  # one read, one write
    triad_gbps: float  # two reads, one write
    fma_gflops: float | None = None
    floor_us: float | None = None  # an empty kernel's time, as the rows were timed
    by: tuple[str, ...] = ()  # which row set each ceiling, `read: stream_read vec4[...]`
    source: str = ""  # the results file of the measurement
    # the relative spread ((p90 - p10) / median) of the row that set each memory ceiling: a
    # row above a ceiling by more than it is flagged (None: unknown, ceilings.SPREAD_FLOOR)
    read_spread: float | None = None
    write_spread: float | None = None
    copy_spread: float | None = None
    triad_spread: float | None = None


@dataclass(frozen=True)
class RunMeta:
    """Everything needed to tell later where and how a results file was made."""

    device: DeviceInfo
    timing_mode: str
    command: str
    started: str  # ISO 8601, UTC
    cudabench_version: str
    cupy_version: str
    nvcc_version: str
    git_sha: str
    timing: TimingOptions
    complete: bool = True  # False while a run is still going (or was cut off)
    devices: tuple[int, ...] = (0,)  # the CUDA devices the rows ran on (one worker each)
    notes: tuple[str, ...] = ()  # what the run could not do as asked (the clock it fell back to)
    ceilings: Ceilings | None = None  # the card's measured ceilings the `% ceiling` column used
    # nvcc's flags for every kernel (compile.NVCC_FLAGS; the dtype's and the configuration's
    # -D definitions are the row's own); '' in files from before it was recorded
    compile_flags: str = ""


VERIFY_PASS = "(verify pass)"  # the end of a run's verify pass's command (run --verify)


def command_kind(command: str) -> str:
    """The kind of run a command made: `run`, `ceilings`, `tune`, `profile`, `verify`... (the
    CLI's `cudabench run ...` and the API's `cudabench.run(...)` alike). A run's verify pass
    (its command ends in VERIFY_PASS) is a `verify`: its rows are checks, not a baseline."""
    if command.endswith(VERIFY_PASS):
        return "verify"
    words = command.split()
    first = words[0] if words else ""
    if first.startswith("cudabench."):
        return first[len("cudabench.") :].split("(")[0]
    return words[1] if len(words) > 1 and first.endswith("cudabench") else first
