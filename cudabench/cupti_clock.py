"""The kernel's own clock: CUPTI activity records -> per-launch samples. Needs no GPU.

Events bracket more than a kernel (launch gaps, the event records themselves, for a
multi-kernel variant the gaps between its kernels), which is most of a cold 5-20 us kernel's
error against Nsight Compute (docs/performance.md). CUPTI's concurrent-kernel activity
records carry each kernel's GPU start and end timestamps (ns). This module turns records into
samples; collecting them (cupti-python's activity API) is the backend's job.

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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


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
    return LaunchTime(span_ns=max(r.end_ns for r in group) - min(r.start_ns for r in group),
                      busy_ns=sum(r.duration_ns for r in group), kernels=len(group))  # fmt: skip


def samples_of(kernels: Iterable[KernelRecord], external: Mapping[int, int], sample_id: int,
               launches: int, kernels_per_launch: int) -> list[LaunchTime]:  # fmt: skip
    """The per-launch times of the sample timed under external id `sample_id`: its kernels
    (correlation id -> external id through `external`), in start order, cut into `launches`
    groups of `kernels_per_launch`. RecordsMissing when the count does not match (CUPTI
    dropped records, or a buffer was not flushed): better no sample than a wrong one."""
    if launches < 1 or kernels_per_launch < 1:
        raise ValueError("launches and kernels_per_launch must be at least 1")
    mine = sorted((k for k in kernels if external.get(k.correlation_id) == sample_id),
                  key=lambda k: (k.start_ns, k.end_ns))  # fmt: skip
    expected = launches * kernels_per_launch
    if len(mine) != expected:
        raise RecordsMissing(f"sample {sample_id}: {len(mine)} kernel records for {launches} "
                             f"launch(es) of {kernels_per_launch} kernel(s), expected "
                             f"{expected}")  # fmt: skip
    return [launch_time(mine[i:i + kernels_per_launch])
            for i in range(0, expected, kernels_per_launch)]  # fmt: skip


def check_dropped(dropped: int) -> None:
    """CUPTI counts the records it could not store (a buffer too small, or filled faster than
    it was handed back); any is a RecordsMissing, with the remedy."""
    if dropped:
        raise RecordsMissing(f"CUPTI dropped {dropped} activity record(s): its buffers filled "
                             "before they were handed back; time fewer launches a sample, or "
                             "use --timer events")  # fmt: skip
