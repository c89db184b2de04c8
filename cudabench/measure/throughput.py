"""A timed row's figures: time, bandwidth, % of peak from a Measurement, which of its raw
samples the results file keeps, and the notes that say when the figures may not mean what
they seem (cache-resident, above the DRAM peak, launch-bound, slowed by CUPTI's tracing)."""

from __future__ import annotations

from typing import Any

from cudabench.core.dtypes import get_dtype
from cudabench.core.records import Case, DeviceInfo
from cudabench.core.timing import Measurement, TimingOptions, median
from cudabench.ops.protocol import OpProtocol


def timed_fields(
    op: OpProtocol,
    case: Case,
    m: Measurement,
    device: DeviceInfo,
    timing: TimingOptions,
    floor_us: float | None,
    blocks: int = 0,
) -> dict[str, Any]:
    """The OK row's figures (ResultRow fields) from its measurement: `floor_us` is the launch
    floor, `blocks` the largest grid of a variant timed by the kernel clock."""
    moved = bytes_of(op, case)
    seconds = m.median_ms * 1e-3
    gbps = moved / seconds / 1e9 if seconds > 0 else None
    flops = op.flops(case.shape) if hasattr(op, "flops") else None
    gflops = flops / seconds / 1e9 if flops and seconds > 0 else None
    if gflops is not None:  # compute-bound op: % of the fp32 peak
        pct = 100.0 * gflops / device.fp32_peak_gflops
    else:
        pct = 100.0 * gbps / device.dram_peak_gbps if gbps else None
    return dict(
        time_us=m.median_ms * 1e3,
        min_us=m.min_ms * 1e3,
        spread=m.spread,
        samples=len(m.samples_ms),
        batch=m.batch,
        method=m.method,
        gbps=gbps,
        gflops=gflops,
        pct_peak=pct,
        bytes_moved=moved,
        samples_us=kept_samples(tuple(s * 1e3 for s in m.samples_ms)),
        notes=sanity_notes(
            gbps, moved, device, timing, m.median_ms * 1e3, floor_us, blocks if m.timer == "cupti" else 0
        ),
        floor_us=floor_us,
        timer=m.timer,
        kernels_us=median(m.busy_ms) * 1e3 if m.busy_ms else None,
        events_us=median(m.events_ms) * 1e3 if m.events_ms else None,
    )


def bytes_of(op: OpProtocol, case: Case) -> int:
    """The bytes the op must move for the case, in its dtype."""
    return op.bytes_moved(case.shape, get_dtype(case.dtype).itemsize)


FLOOR_FACTOR = 2.0  # a time within this factor of the empty kernel's measures the launch
# Raw samples a row keeps in the results file: the kernel clock makes one a launch (100,000
# for a 2 us kernel), so beyond this many an evenly spaced subset is kept (the figures are
# computed from all of them; compare's noise from the kept ones is then a little wider).
MAX_KEPT_SAMPLES = 1000


def kept_samples(samples: tuple[float, ...]) -> tuple[float, ...]:
    if len(samples) <= MAX_KEPT_SAMPLES:
        return samples
    step = len(samples) / MAX_KEPT_SAMPLES
    return tuple(samples[int(i * step)] for i in range(MAX_KEPT_SAMPLES))


# Grids from this many blocks up ran 3-9% slower while CUPTI traced them (H100, 2026-11-23:
# 442368 and a million blocks; grid-stride kernels did not move): the kernel clock says so.
TRACED_MANY_BLOCKS = 100_000


def sanity_notes(
    gbps: float | None,
    moved: int,
    device: DeviceInfo,
    timing: TimingOptions,
    time_us: float | None = None,
    floor_us: float | None = None,
    traced_blocks: int = 0,
) -> str:
    """Warnings that the figures may not mean what they seem (`traced_blocks`: the grid of a
    variant timed by the kernel clock)."""
    notes = []
    if gbps and gbps > device.dram_peak_gbps:
        notes.append("above the DRAM peak: cached, or bytes miscounted")
    elif not timing.cold and moved <= device.l2_bytes:
        notes.append("fits in L2: --cold would be honest")
    if time_us is not None and floor_us and time_us < FLOOR_FACTOR * floor_us:
        notes.append(
            f"within {FLOOR_FACTOR:g}x of the launch floor ({floor_us:.1f} us): mostly launch overhead"
        )
    if traced_blocks >= TRACED_MANY_BLOCKS:
        notes.append(
            f"a grid of {traced_blocks:,} blocks: CUPTI's tracing slowed such kernels "
            "3-9% on an H100; --timer events to compare"
        )
    return "; ".join(notes)
