"""CUPTI activity records -> per-launch samples (cudabench/backends/cupti_clock.py), without a GPU:
the records are built by hand as CUPTI would deliver them."""

from __future__ import annotations

import random

import pytest

from cudabench.backends.cupti_clock import (
    KernelClockUnavailable,
    KernelRecord,
    LaunchTime,
    RecordsMissing,
    by_sample,
    check_dropped,
    cut,
    launch_time,
    launch_times,
    resolve_timer,
)


def samples_of(kernels, external, sample_id, launches, kernels_per_launch=None):
    """One sample's per-launch times, as launch_times cuts them (its records grouped first)."""
    return cut(by_sample(kernels, external).get(sample_id, []), sample_id, launches, kernels_per_launch)


def kernel(corr: int, start: int, end: int, name: str = "k") -> KernelRecord:
    return KernelRecord(correlation_id=corr, start_ns=start, end_ns=end, name=name)


def test_a_single_kernel_launch_is_its_duration():
    # sample 7 is API call 101; the flush kernel (call 100) ran just before, outside any id
    kernels = [kernel(100, 0, 30_000, "flush"), kernel(101, 31_000, 37_400, "reduce")]
    (t,) = samples_of(kernels, {101: 7}, 7, launches=1, kernels_per_launch=1)
    assert t == LaunchTime(span_ns=6_400, busy_ns=6_400, kernels=1)


def test_a_multi_kernel_variant_keeps_span_and_sum():
    """softmax three_pass: max, sum, normalise; the gaps between them are in the span."""
    kernels = [kernel(11, 1_000, 4_000), kernel(12, 4_800, 7_000), kernel(13, 7_500, 12_000)]
    (t,) = samples_of(kernels, {11: 1, 12: 1, 13: 1}, 1, launches=1, kernels_per_launch=3)
    assert t.span_ns == 11_000 and t.busy_ns == 3_000 + 2_200 + 4_500 and t.kernels == 3


def test_a_graph_batch_is_one_sample_per_launch():
    """A graph of 4 launches of a 2-kernel variant: one API call (correlation 50), 8 kernel
    records, 4 samples; the stopping rule then counts 4."""
    kernels = []
    t = 0
    for launch in range(4):
        for part in range(2):
            kernels.append(kernel(50, t, t + 1_000 + 100 * launch + 10 * part))
            t += 1_500
    samples = samples_of(kernels, {50: 3}, 3, launches=4, kernels_per_launch=2)
    assert len(samples) == 4
    assert [s.busy_ns for s in samples] == [2_010, 2_210, 2_410, 2_610]
    assert [s.span_ns for s in samples] == [2_510, 2_610, 2_710, 2_810]


def test_records_out_of_order_and_other_work_between():
    """Buffers arrive in any order; a flush kernel and another sample's kernels sit between
    this sample's. Only correlation decides, never position or name."""
    mine = [kernel(201, 10_000, 12_000, "same_name"), kernel(202, 20_000, 23_000, "same_name")]
    others = [
        kernel(200, 0, 9_000, "flush"),
        kernel(203, 13_000, 19_000, "same_name"),
        kernel(999, 30_000, 40_000, "same_name"),
    ]
    records = mine + others
    random.Random(1).shuffle(records)
    external = {201: 5, 202: 5, 203: 6}  # 999: outside any sample (not ours)
    samples = samples_of(records, external, 5, launches=2, kernels_per_launch=1)
    assert [s.busy_ns for s in samples] == [2_000, 3_000]
    (other,) = samples_of(records, external, 6, launches=1, kernels_per_launch=1)
    assert other.busy_ns == 6_000


def test_missing_or_extra_records_are_an_error_not_a_sample():
    kernels = [kernel(1, 0, 100), kernel(1, 200, 300), kernel(1, 400, 500)]
    with pytest.raises(RecordsMissing, match="3 kernel records for 2 launch.*expected 4"):
        samples_of(kernels, {1: 9}, 9, launches=2, kernels_per_launch=2)
    with pytest.raises(RecordsMissing, match="0 kernel records"):
        samples_of(kernels, {1: 9}, 8, launches=1, kernels_per_launch=1)
    with pytest.raises(ValueError):
        samples_of(kernels, {1: 9}, 9, launches=0, kernels_per_launch=1)
    with pytest.raises(ValueError):
        launch_time([])


def test_dropped_records_are_reported_with_the_remedy():
    check_dropped(0)
    with pytest.raises(RecordsMissing, match="dropped 12 activity record.*--timer events"):
        check_dropped(12)


# ------------------------------------------------------------------ grouping and cutting


def test_a_library_call_of_unknown_kernel_count_is_cut_evenly():
    """A baseline (CUB's two kernels a call) in a graph of 3 calls: 6 records, 3 samples of 2;
    5 records cannot be 3 launches of the same call and are an error."""
    records = [kernel(7, 1_000 * i, 1_000 * i + 800) for i in range(6)]
    samples = samples_of(records, {7: 1}, 1, launches=3)
    assert [s.kernels for s in samples] == [2, 2, 2]
    assert [s.span_ns for s in samples] == [1_800] * 3 and samples[0].busy_ns == 1_600
    with pytest.raises(RecordsMissing, match="5 kernel records for 3 launch.*multiple of 3"):
        samples_of(records[:5], {7: 1}, 1, launches=3)


def test_a_record_without_timestamps_is_no_sample():
    with pytest.raises(RecordsMissing, match="without timestamps"):
        samples_of([kernel(3, 0, 0)], {3: 1}, 1, launches=1)


def test_launch_times_follow_the_samples_in_order():
    """Two samples, one a graph of 2 launches and one single launch (ids 4 and 5), with a
    flush kernel between them that no sample owns."""
    records = [
        kernel(40, 100, 300),
        kernel(40, 400, 700),
        kernel(41, 800, 5_000, "flush"),
        kernel(42, 5_100, 5_200),
    ]
    random.Random(3).shuffle(records)
    external = {40: 4, 42: 5}
    times = launch_times(records, external, [(4, 2), (5, 1)])
    assert [t.span_ns for t in times] == [200, 300, 100]
    assert by_sample(records, external).keys() == {4, 5}


# ------------------------------------------------------------------ which clock


def test_the_clock_a_run_gets():
    assert resolve_timer("events", "") == ("events", "")
    assert resolve_timer("events", "no driver") == ("events", "")
    assert resolve_timer("auto", "") == ("cupti", "")
    assert resolve_timer("cupti", "") == ("cupti", "")
    assert resolve_timer("both", "") == ("both", "")
    clock, note = resolve_timer("auto", "cupti-python does not load")
    assert clock == "events" and note == (
        "timer: CUDA events (CUPTI unavailable: cupti-python does not load)"
    )
    for strict in ("cupti", "both"):
        with pytest.raises(
            KernelClockUnavailable,
            match=f"--timer {strict}: CUPTI unavailable: another profiler.*--timer events",
        ):
            resolve_timer(strict, "another profiler holds it")
    with pytest.raises(ValueError, match="unknown timer 'ncu'"):
        resolve_timer("ncu", "")
