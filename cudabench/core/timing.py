"""Frozen records of how a row is timed and what the clocks saw: the timing options, one
measurement's samples, the card's telemetry over them and Nsight Compute's metrics. No I/O
here, and nothing that needs a GPU (core/records.py holds the rows they end up in)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingOptions:
    """How samples are taken (see measure.py for the stopping rule)."""

    cold: bool = False  # flush L2 before every sample
    warmup: int = 3  # launches before sampling starts
    min_samples: int = 10
    min_time_s: float = 0.2  # GPU time the samples must add up to, at least
    max_time_s: float = 10.0  # stop sampling after this much GPU time, whatever the count
    # Stop sooner once the median is known (95%, distribution-free) to within this relative
    # half-width or a quarter of the samples' own spread, whichever is wider (sampling.precise),
    # after min_samples; 0: off. tune's rounds (1%) and final round (0.25%) use it: their rows
    # are ranked against ties of 1% or more, not reported to 0.1%
    precision: float = 0.0
    batch_below_us: float = 50.0  # shorter launches are timed in batches, longer ones singly
    interleave: bool = False  # sample the variants of a shape in turn (A B A B ...)
    batch_target_us: float = 2000.0  # a batch of short launches lasts about this long
    # The clock (cupti_clock.TIMERS): "events" (CUDA events around each sample), "cupti"
    # (CUPTI's kernel records), "both" (CUPTI's time, the events' beside it) or "auto" (CUPTI
    # where it can start, else events). Events stay the default: docs/performance.md, "The
    # kernel clock against Nsight Compute"
    timer: str = "events"
    # Telemetry (telemetry.py): leave samples the card took while slowed for power or heat out
    # of the statistics; warm up until the SM clock settles ("auto": on for cold rows of
    # launches from batch_below_us up); wait for the GPU to cool to this many degrees C before
    # each variant (0: no wait); measure energy per call (a window of back-to-back calls after
    # the samples; off by default: it adds the window to every row)
    drop_throttled: bool = False
    settle: str = "auto"  # auto, on, off
    cooldown_c: int = 0
    energy: bool = False
    # NVML's gauges during the samples (telemetry.Watch: throttled samples marked, clocks and
    # temperature kept); tune's search rounds turn it off: on an H200 a configuration's timing
    # took 12 ms with its reads and 7 ms without
    watch: bool = True
    fill: str = "random"  # the inputs: random, zeros or ones (a zero fill draws less power)
    clocks: str = "default"  # the SM clock policy the run asked for: default, base, max or MHz

    @property
    def mode(self) -> str:
        """The L2 mode; runs in different modes are not compared."""
        return "cold" if self.cold else "hot"


def median(values: tuple[float, ...] | list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


@dataclass(frozen=True)
class SampleTelemetry:
    """The card over one row's timed samples, from NVML (telemetry.Watch)."""

    marked: tuple[bool, ...]  # each sample: taken while the card was slowed (power, heat)
    reasons: tuple[str, ...]  # the slowdown reasons seen
    sm_mhz: tuple[int, int] | None  # at the first and the last reading
    mem_mhz: tuple[int, int] | None
    sm_min: int | None  # over the polls
    sm_median: int | None
    temp_c: tuple[int, int] | None


@dataclass(frozen=True)
class Measurement:
    """Raw per-launch times (ms) of the samples, and what they were taken with.

    With the events clock a sample is one event pair around `batch` launches, divided by
    `batch`. With the CUPTI clock a sample is one launch: its kernels' span from their
    activity records (`busy_ms` holds their summed durations, launch by launch); with
    `--timer both`, `events_ms` holds the samples of an events measurement taken just before."""

    samples_ms: tuple[float, ...]
    batch: int  # launches per sample; each sample is already divided by it
    method: str  # "graph" (a CUDA graph of `batch` launches), "loop", or "single"
    timer: str = "events"  # "events" or "cupti"
    busy_ms: tuple[float, ...] = ()  # cupti: each launch's kernel durations summed
    events_ms: tuple[float, ...] = ()  # both: the events clock's own samples (ms a launch)
    telemetry: SampleTelemetry | None = None  # the card over the samples (None: no NVML)
    throttled: int = 0  # samples taken while the card was slowed (telemetry.Watch)
    dropped: int = 0  # of them, left out of samples_ms (--drop-throttled)
    settle_s: float | None = None  # warm-up until the SM clock settled (--settle)

    @property
    def median_ms(self) -> float:
        return median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def spread(self) -> float:
        """Relative spread: (p90 - p10) / median, a robust width of the distribution."""
        s = sorted(self.samples_ms)
        lo = s[int(0.1 * (len(s) - 1))]
        hi = s[math.ceil(0.9 * (len(s) - 1))]
        return (hi - lo) / self.median_ms if self.median_ms > 0 else 0.0


@dataclass(frozen=True)
class ProfileMetrics:
    """What Nsight Compute measured for one (case, variant): its NVTX range's kernels, summed
    (times, bytes) or duration-weighted (percentages), from `cudabench profile`."""

    kernels: int  # launches ncu profiled in the range (a multi-kernel call: all of them)
    duration_us: float  # gpu__time_duration.sum, summed over the kernels
    dram_pct: float | None = None  # DRAM throughput, % of its peak
    memory_pct: float | None = None  # the busiest memory unit (L1, L2, DRAM), % of peak
    sm_pct: float | None = None  # SM throughput, % of peak
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    registers: int | None = None  # per thread (the largest of the kernels)
    shared_mem_bytes: int | None = None  # per block, static + dynamic (the largest)
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    sm_clock_ghz: float | None = None  # the SM clock ncu saw (clock control off)
    # cold profiles: % of the kernels' L2 read lookups from the SMs (L1TEX) that hit, from
    # lts__t_sectors_srcunit_tex_op_read_lookup_{hit,miss}.sum (ncu.L2_READ_HIT)
    l2_hit_pct: float | None = None
    bound: str = ""  # "memory", "compute" or "latency": a hint from the throughputs
    extra: dict[str, float] = field(default_factory=dict)  # metrics asked with --metrics
