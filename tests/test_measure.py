import itertools
import random
import time
from dataclasses import replace

import pytest

from cudabench.core.timing import Measurement, TimingOptions
from cudabench.measure.sampling import (
    LONG_CALL_S,
    MAX_BATCH,
    PILOT_SAMPLES,
    PRECISION_EVERY,
    SPREAD_SHARE,
    batch_size,
    collect,
    measure,
    median_halfwidth,
    precise,
)


def test_batch_size_makes_short_launches_a_long_sample():
    options = TimingOptions(batch_target_us=2000)
    assert batch_size(0.002, options) == 1000  # 2 us launches: 1000 a sample
    assert batch_size(0.04, options) == 50
    assert batch_size(0.05, options) == 1  # 50 us and more: one isolated launch per sample
    assert batch_size(5.0, options) == 1
    assert batch_size(0.0, options) == MAX_BATCH
    assert batch_size(0.002, TimingOptions(cold=True)) == 1  # cold: one launch after a flush


def test_collect_needs_both_count_and_time():
    options = TimingOptions(min_samples=5, min_time_s=0.016, max_time_s=1.0)
    assert len(collect(lambda: 1.0, 1, options)) == 16  # 1 ms samples: the time rule decides
    assert len(collect(lambda: 8.0, 1, options)) == 5  # 8 ms samples: the count rule decides
    assert len(collect(lambda: 1.0, 4, options)) == 5  # batch 4: each sample is 4 ms of GPU


def test_collect_stops_at_max_time_even_below_min_samples():
    options = TimingOptions(min_samples=100, min_time_s=0.0, max_time_s=0.5)
    assert len(collect(lambda: 200.0, 1, options)) == 3


def test_median_halfwidth_is_the_sign_tests_interval():
    assert median_halfwidth([1.0, 1.0]) == float("inf")  # too few to say
    # five: even their whole range holds the median only 1 - 2/32 = 94% of the time
    assert median_halfwidth([1.0, 1.01, 0.99, 1.0, 1.0]) == float("inf")
    assert median_halfwidth([1.0, 1.01, 0.99, 1.0, 1.0, 1.0]) == pytest.approx(0.01)  # 6: the range
    # n = 100: the 95% interval runs from the 40th to the 61st of the sorted samples (1-based)
    samples = [100.0 + i for i in range(100)]
    assert median_halfwidth(samples) == pytest.approx((160.0 - 139.0) / 2 / 149.5)
    # n = 10: ranks 1..10, the whole range (the exact interval, ranks 2..9, covers only 97.9%
    # with these ten; the normal approximation keeps it on the safe side)
    assert median_halfwidth([10.0 + i for i in range(10)]) == pytest.approx(9.0 / 2 / 14.5)
    assert median_halfwidth([5.0] * 12) == 0.0


def test_precision_stops_a_row_once_its_median_is_known_to_the_tie_margin():
    options = TimingOptions(min_samples=10, min_time_s=0.2, max_time_s=1.0, precision=0.0025)
    steady = itertools.cycle([1.0, 1.001, 0.999])  # 0.1% apart: known at the first look
    assert len(collect(lambda: next(steady), 1, options)) == 10
    # 1 ms +- 10%: its spread (p10..p90) is about 16%, so its median is needed to about 4%,
    # which a few tens of samples give; the time rule alone would take 200
    draw = random.Random(0)
    noisy = collect(lambda: draw.uniform(0.9, 1.1), 1, options)
    assert 10 < len(noisy) < 60 and (len(noisy) - 10) % PRECISION_EVERY == 0
    spread = Measurement(samples_ms=tuple(noisy), batch=1, method="").spread
    assert median_halfwidth(noisy) <= SPREAD_SHARE * spread
    assert not precise(noisy[:-PRECISION_EVERY], 0.0025)  # the look before said go on
    # where the spread is narrower than the precision asked, the precision decides: 1 ms
    # +- 0.1% is known to 0.25% at the first look, to 0.01% (a quarter of its spread, 0.04%,
    # then rules) only after more samples
    draw = random.Random(1)
    loose = collect(lambda: draw.uniform(0.999, 1.001), 1, options)
    tight = collect(lambda: draw.uniform(0.999, 1.001), 1, replace(options, precision=0.0001))
    assert len(loose) == 10 and 10 < len(tight) < 200
    # off by default: the same steady row samples for the whole minimum time
    steady = itertools.cycle([1.0, 1.001, 0.999])
    assert len(collect(lambda: next(steady), 1, replace(options, precision=0.0))) == 200


def test_measurement_statistics():
    m = Measurement(samples_ms=(1.0, 3.0, 2.0, 100.0, 2.0), batch=4, method="graph")
    assert m.median_ms == 2.0 and m.min_ms == 1.0
    assert m.spread == pytest.approx((100.0 - 1.0) / 2.0)
    even = Measurement(samples_ms=(1.0, 2.0, 3.0, 4.0), batch=1, method="single")
    assert even.median_ms == 2.5


class ScriptedBackend:
    """Counts calls and returns scripted sample times."""

    def __init__(self, times, run_s=0.0):
        self.times = itertools.cycle(times)
        self.calls = self.samples = 0
        self.run_s = run_s  # host time a warm-up call takes

    def run(self, call):
        self.calls += 1
        time.sleep(self.run_s)

    def synchronize(self):
        pass

    def kernel_clock_error(self):  # timer auto: CUDA events
        return "not in this test"

    def gauge(self):  # no NVML
        return None

    def sampler(self, call, batch, cold, scope, reset=None, kernel_clock=False):
        backend = self

        class S:
            method = "single" if cold else "graph"

            def __init__(self):
                self.batch = batch

            def __call__(self):
                backend.samples += 1
                return next(backend.times)

        return S()


def test_measure_warms_up_then_batches():
    backend = ScriptedBackend([0.01])
    m = measure(backend, lambda: None, TimingOptions(warmup=3, min_samples=4, min_time_s=0))
    assert backend.calls == 3
    assert m.batch == 200 and m.method == "graph" and len(m.samples_ms) == 4
    cold = measure(backend, lambda: None, TimingOptions(cold=True, min_samples=2, min_time_s=0))
    assert cold.batch == 1 and cold.method == "single"


def test_a_long_call_is_its_own_warm_up_and_pilot():
    """A launch of 0.1 s or more: one warm-up call and one pilot sample, not 3 and 3 (a 2 s
    kernel spent 12 s there); a short one keeps the full warm-up and pilot."""
    options = TimingOptions(warmup=3, min_samples=2, min_time_s=0)
    long = ScriptedBackend([150.0], run_s=LONG_CALL_S)
    m = measure(long, lambda: None, options)
    assert (long.calls, long.samples) == (1, 1 + 2)  # warm-up 1; pilot 1, then the 2 samples
    assert m.batch == 1 and len(m.samples_ms) == 2
    short = ScriptedBackend([0.01])
    measure(short, lambda: None, options)
    assert (short.calls, short.samples) == (3, PILOT_SAMPLES + 2)
    no_warm_up = ScriptedBackend([150.0], run_s=LONG_CALL_S)
    measure(no_warm_up, lambda: None, replace(options, warmup=0))
    assert (no_warm_up.calls, no_warm_up.samples) == (0, 1 + 2)
