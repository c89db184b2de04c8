"""The kernel's own clock: CUPTI activity records -> per-launch samples. Needs no GPU.

Events bracket more than a kernel (launch gaps, the event records themselves, for a
multi-kernel variant the gaps between its kernels), which is most of a cold 5-20 us kernel's
error against Nsight Compute (docs/performance.md, "The kernel clock against Nsight
Compute"). CUPTI's concurrent-kernel activity records carry each kernel's GPU start and end
timestamps (ns). This module turns records into samples, and decides which clock a run uses;
collecting the records (cupti-python's activity API) is backends/cupti.py's job.

Matching is by correlation, never by position or name: the timed launches of a sample run
inside an external-correlation id (CUPTI's `activity_push_external_correlation_id`), so each
API call made there gets an EXTERNAL_CORRELATION record (external id -> CUPTI correlation id)
and each kernel it starts a record with that correlation id. The L2 flush, the spin kernel
that keeps the queue full, and any other cudabench work run outside those ids and are never
counted. A CUDA graph of `batch` launches is one API call (one correlation id) whose kernel
nodes each get a record: sorted by start they are `batch` consecutive groups of the variant's
kernels, so a graph yields `batch` samples and the stopping rule sees each launch.

Per launch, both the span (first start to last end: what the variant costs, gaps between its
kernels included) and the sum of its kernels' durations are kept; the span is the time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# The clocks a run can ask for (`--timer`): CUDA events around the launches; CUPTI's kernel
# records; both (the CUPTI time is the row's, an events measurement taken just before beside it);
# auto: CUPTI where it can start, else events with a note in the run's metadata.
TIMERS = ("auto", "cupti", "events", "both")


class KernelClockUnavailable(RuntimeError):
    """CUPTI cannot run here (not installed, no driver, another profiler holds it); the
    message is one line for the user."""


class RecordsMissing(RuntimeError):
    """The records do not account for the launches (dropped by CUPTI, or never flushed)."""


@dataclass(frozen=True)
class KernelRecord:
    """One kernel's execution, from a CUPTI concurrent-kernel activity record."""

    correlation_id: int  # the API call that started it (a cuGraphLaunch for graph nodes)
    start_ns: int
    end_ns: int
    name: str = ""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class LaunchTime:
    """One launch of a variant, from its kernels' records."""

    span_ns: int  # first kernel's start to last kernel's end
    busy_ns: int  # the kernels' durations summed (equal to the span for one kernel)
    kernels: int


def launch_time(records: Iterable[KernelRecord]) -> LaunchTime:
    """The span and summed duration of one launch's kernels."""
    group = list(records)
    if not group:
        raise ValueError("a launch needs at least one kernel record")
    return LaunchTime(
        span_ns=max(r.end_ns for r in group) - min(r.start_ns for r in group),
        busy_ns=sum(r.duration_ns for r in group),
        kernels=len(group),
    )


def by_sample(kernels: Iterable[KernelRecord], external: Mapping[int, int]) -> dict[int, list[KernelRecord]]:
    """Kernel records grouped by the external id (sample) their API call ran under; records
    of calls made outside any sample (flush, spin, checks) are left out."""
    groups: dict[int, list[KernelRecord]] = defaultdict(list)
    for k in kernels:
        sample = external.get(k.correlation_id)
        if sample is not None:
            groups[sample].append(k)
    return groups


def cut(
    records: Sequence[KernelRecord], sample_id: int, launches: int, kernels_per_launch: int | None = None
) -> list[LaunchTime]:
    """One sample's records (any order) in start order, cut into `launches` groups of
    `kernels_per_launch` (None: as many as divide evenly, for a library call whose kernel
    count is not known). RecordsMissing when the count does not fit, or a record has no
    timestamps (CUPTI dropped records, or a buffer was not flushed): better no sample than a
    wrong one."""
    if launches < 1 or (kernels_per_launch is not None and kernels_per_launch < 1):
        raise ValueError("launches and kernels_per_launch must be at least 1")
    mine = sorted(records, key=lambda k: (k.start_ns, k.end_ns))
    per = kernels_per_launch or max(1, len(mine) // launches)
    if len(mine) != launches * per:
        expected = (
            f"expected {launches * per}" if kernels_per_launch else f"expected a multiple of {launches}"
        )
        raise RecordsMissing(
            f"sample {sample_id}: {len(mine)} kernel records for {launches} launch(es), {expected}"
        )
    if any(k.end_ns <= 0 or k.end_ns < k.start_ns for k in mine):
        raise RecordsMissing(f"sample {sample_id}: a kernel record without timestamps")
    return [launch_time(mine[i : i + per]) for i in range(0, len(mine), per)]


def launch_times(
    kernels: Iterable[KernelRecord], external: Mapping[int, int], samples: Sequence[tuple[int, int]]
) -> list[LaunchTime]:
    """Every launch of a measurement, in order: `samples` lists (external id, launches) of
    each sample taken; the records are grouped once, then each sample cut."""
    groups = by_sample(kernels, external)
    out: list[LaunchTime] = []
    for sample_id, launches in samples:
        out += cut(groups.get(sample_id, []), sample_id, launches)
    return out


def resolve_timer(asked: str, unavailable: str) -> tuple[str, str]:
    """The clock a run uses, and a note for its metadata: `asked` is a TIMERS name,
    `unavailable` why CUPTI cannot run ('' when it can). auto falls back to events with a
    note; cupti or both without CUPTI is a KernelClockUnavailable (the CLI: one line, exit 2)."""
    if asked not in TIMERS:
        raise ValueError(f"unknown timer {asked!r} (choose {', '.join(TIMERS)})")
    if asked == "events":
        return "events", ""
    if unavailable:
        if asked == "auto":
            return "events", f"timer: CUDA events (CUPTI unavailable: {unavailable})"
        raise KernelClockUnavailable(
            f"--timer {asked}: CUPTI unavailable: {unavailable} (--timer events uses CUDA events)"
        )
    return ("both" if asked == "both" else "cupti"), ""


def check_dropped(dropped: int) -> None:
    """CUPTI counts the records it could not store (a buffer too small, or filled faster than
    it was handed back); any is a RecordsMissing, with the remedy."""
    if dropped:
        raise RecordsMissing(
            f"CUPTI dropped {dropped} activity record(s): its buffers filled "
            "before they were handed back; time fewer launches a sample, or "
            "use --timer events"
        )
