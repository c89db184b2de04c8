"""Warm-up, batch sizing and the stopping rule: a call -> Measurement.

1. Warm up: `warmup` calls, so module load, first-touch and clock ramp stay out of the numbers.
   A first call of `LONG_CALL_S` (0.1 s) or more has done all of that on its own: it is the
   only one (a 2 s call would otherwise cost 4 s of warm-up; triton's do_bench also sizes its
   warm-up in time, not calls).
2. Pilot: the fastest of three single-launch samples says roughly how long a launch takes
   (the first replay of a fresh graph can be hundreds of microseconds slow); a sample of
   `LONG_CALL_S` or more ends the pilot at once (its launches are timed one a sample).
3. Batch (hot mode): launches shorter than `batch_below_us` (50 us) are timed `batch` at a
   time, back to back in a CUDA graph, so that a sample lasts about `batch_target_us`; event
   and launch overhead (~4-5 us an event pair on an H200) then costs well under 1% even for
   a 2 us kernel. Longer launches are timed one per sample, isolated: the backend keeps the
   GPU busy while the launch is queued (a spin kernel), so the events bracket the kernel and
   not the CPU's launch overhead; this is what Nsight Compute's gpu__time_duration measures.
   Cold mode times one launch per sample, after an L2 flush.
4. Sample until both `min_samples` samples and `min_time_s` of GPU time are reached (the
   triton/nvbench rule), or `max_time_s` is spent, whichever comes first. With `precision`
   (tune's rounds and final round), a row also stops once its median is known (95%,
   distribution-free: the order statistics around the median) to within that relative
   half-width or a quarter of the samples' own spread, whichever is larger (`precise`): two
   rows' difference is then known to about half the tie margin, which more samples would
   rarely move across it. A row is then done in tens of samples, not the 0.2 s that ranks
   nothing better. With `interleave`
   the variants of one shape take their samples in turn (measure_interleaved). A backend whose
   clock is scripted (`scripted_clock`: the fake's) has no noise for the time rule to average:
   its rows stop at `min_samples` (`sampling_options`), so a fake run takes seconds.

The median is the reported figure; min and the relative spread come with it.

Telemetry (telemetry.py, where the backend has NVML's gauges and `watch` is on): a Watch
marks the samples the card took while slowed for power or heat (`drop_throttled` leaves them
out of the figures, unless all were); with `settle` (or `auto` for cold single launches) the
warm-up goes on until the SM clock's median stops moving.

The clock (`options.timer`, cupti_clock.TIMERS): CUDA events around each sample, as above;
or CUPTI's kernel records (`cupti`), where a sample's launches run under an external
correlation id and each launch becomes one sample (a graph of `batch` launches gives `batch`),
its time the span of its own kernels with nothing else in it: no launch gaps before or after,
no event records, no flush or spin. The stopping rule then counts launches. `both` measures
twice, with events alone first and then with the kernel clock, and keeps the events' samples
beside (CUPTI's tracing adds about a microsecond to every launch of a graph, so events taken
while it traces would not be the events clock); `auto` is CUPTI where it can start, else
events.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import replace

from cudabench.backends.base import MAX_BATCH, Backend, Sampler, Scope
from cudabench.backends.cupti_clock import resolve_timer
from cudabench.core.timing import Measurement, TimingOptions, median
from cudabench.measure.telemetry import Watch, settle

PILOT_SAMPLES = 3
LONG_CALL_S = 0.1  # a call this long is its own warm-up, and one pilot sample is enough


def batch_size(pilot_ms: float, options: TimingOptions) -> int:
    """How many launches a hot-mode sample holds, given one launch's rough time."""
    if options.cold or pilot_ms * 1000.0 >= options.batch_below_us:
        return 1
    target_ms = options.batch_target_us / 1000.0
    if pilot_ms <= 0:
        return MAX_BATCH
    return max(1, min(MAX_BATCH, math.ceil(target_ms / pilot_ms)))


PRECISION_EVERY = 8  # samples between two looks at the median's precision (a sort each)
# A row's median needs to be known only to this share of its own spread (p10..p90, the
# tie margin tuning's ties_of uses): rows further apart than their spread are then told
# apart, and rows closer called ties, with more samples rarely saying otherwise
SPREAD_SHARE = 0.25


def median_halfwidth(samples: list[float]) -> float:
    """The relative half-width of a 95% confidence interval for the median of `samples`,
    distribution-free: between the order statistics of ranks floor((n - 1.96 sqrt(n)) / 2)
    and ceil(1 + (n + 1.96 sqrt(n)) / 2) (the sign test's interval, normal approximation),
    halved, over the median; inf for fewer than 6 samples (below 6, even the whole range
    covers the median less than 95% of the time: 1 - 2 / 2^n)."""
    n = len(samples)
    if n < 6:
        return math.inf
    s = sorted(samples)
    mid = median(s)
    reach = 0.98 * math.sqrt(n)  # 1-based ranks above; 0-based indices here
    lo, hi = max(0, math.floor(n / 2 - reach) - 1), min(n - 1, math.ceil(n / 2 + reach))
    return (s[hi] - s[lo]) / 2 / mid if mid > 0 else math.inf


def precise(samples: list[float], precision: float) -> bool:
    """Whether the median of `samples` is known well enough: its 95% half-width at most
    `precision` or SPREAD_SHARE of the samples' relative spread, whichever is larger."""
    if not samples:
        return False
    spread = Measurement(samples_ms=tuple(samples), batch=1, method="").spread
    return median_halfwidth(samples) <= max(precision, SPREAD_SHARE * spread)


def enough(count: int, spent_s: float, options: TimingOptions, samples: list[float] | None = None) -> bool:
    """The stopping rule: both the minimum count and the minimum GPU time, or the maximum;
    with `options.precision` and the `samples` so far, also the median's precision (looked
    at every PRECISION_EVERY samples from `min_samples` on: `precise`). The precision is
    judged on the samples as taken (with the kernel clock, a sample's mean launch, not the
    launches the row then reports; throttled samples included)."""
    if spent_s >= options.max_time_s:
        return True
    if count < options.min_samples:
        return False
    if spent_s >= options.min_time_s:
        return True
    if options.precision <= 0 or not samples:
        return False
    n = len(samples)
    due = n >= options.min_samples and (n - options.min_samples) % PRECISION_EVERY == 0
    return due and precise(samples, options.precision)


def counted(taken: int, batch: int, clock: str) -> int:
    """The samples the stopping rule sees after `taken` samples of `batch` launches: one a
    sample with events, one a launch with the kernel clock."""
    return taken * (1 if clock == "events" else batch)


def collect(
    sample: Callable[[], float],
    batch: int,
    options: TimingOptions,
    clock: str = "events",
    watch: Watch | None = None,
) -> list[float]:
    """Call `sample` (returns ms per launch) until the stopping rule is met; `watch` is told
    of each sample (it marks those the card took while slowed)."""
    samples: list[float] = []
    spent_s = 0.0
    while True:
        ms = sample()
        samples.append(ms)
        if watch is not None:
            watch.sample_done()
        spent_s += ms * batch / 1000.0
        if enough(counted(len(samples), batch, clock), spent_s, options, samples):
            return samples


def sampling_options(backend: Backend, options: TimingOptions) -> TimingOptions:
    """The options the stopping rule applies on `backend`: as asked, but without the minimum
    GPU time on a backend whose clock is scripted (`scripted_clock`, the fake's): every sample
    of a call is the same scripted time, there is nothing to average over time, and at the
    fake's 0.1 ms a row would take 2,000 samples (each one launch of its NumPy stand-in) to
    reach the default 0.2 s. Warm-up, pilot, `min_samples` and `max_time_s` stay as asked."""
    if getattr(backend, "scripted_clock", False) and options.min_time_s > 0:
        return replace(options, min_time_s=0.0)
    return options


def clock_of(backend: Backend, options: TimingOptions) -> str:
    """The clock a measurement uses: events, cupti or both (auto resolved on this backend);
    KernelClockUnavailable when cupti or both is asked for and CUPTI cannot run."""
    asked = options.timer
    return resolve_timer(asked, "" if asked == "events" else backend.kernel_clock_error())[0]


def _session(backend: Backend, clock: str) -> contextlib.AbstractContextManager[object]:
    return contextlib.nullcontext() if clock == "events" else backend.kernel_clock()


def measure(
    backend: Backend,
    call: Callable[[], None],
    options: TimingOptions,
    scope: Scope = contextlib.nullcontext,
    reset: Callable[[], None] | None = None,
) -> Measurement:
    """Time `call` (one launch of the thing measured) on `backend`. `scope()` is entered
    around every launch of `call` (the NVTX ranges) and around nothing else: the L2 flush or
    the spin a sample needs stays outside, as does `reset` (an in-place op's input restored
    before every sample)."""
    options = sampling_options(backend, options)
    clock = clock_of(backend, options)
    events = (
        measure(backend, call, replace(options, timer="events"), scope, reset) if clock == "both" else None
    )
    with _session(backend, clock):  # open before the sampler captures its graph
        sampler, settled = _prepare(backend, call, options, scope, reset, clock)
        watch = _watch(backend, options)
        samples = collect(sampler, sampler.batch, options, clock, watch)
        return _measurement(sampler, samples, clock, events, watch, options, settled)


def _watch(backend: Backend, options: TimingOptions) -> Watch | None:
    gauge = backend.gauge() if options.watch else None
    return Watch(gauge) if gauge is not None else None


def _measurement(
    sampler: Sampler,
    samples: list[float],
    clock: str,
    events: Measurement | None = None,
    watch: Watch | None = None,
    options: TimingOptions | None = None,
    settle_s: float | None = None,
) -> Measurement:
    """The samples as a Measurement: the events' as they are, or the kernel clock's launches
    (span as the time, summed durations kept beside, and with `both` the events' own
    measurement's samples); with the watch's marks, and without the marked samples when
    `options.drop_throttled` (unless every sample was marked: then none is dropped)."""
    telemetry = watch.finish() if watch is not None else None
    marked = telemetry.marked if telemetry is not None else ()
    if clock == "events":
        times, busy = tuple(samples), tuple[float, ...]()
    else:
        launches = sampler.launch_times()
        times = tuple(t.span_ns / 1e6 for t in launches)
        busy = tuple(t.busy_ns / 1e6 for t in launches)
        if len(marked) * sampler.batch == len(times):  # a sample's marks on each of its launches
            marked = tuple(m for m in marked for _ in range(sampler.batch))
    throttled = sum(marked) if len(marked) == len(times) else 0
    dropped = 0
    if options is not None and options.drop_throttled and 0 < throttled < len(times):
        keep = [not m for m in marked]
        times = tuple(t for t, k in zip(times, keep) if k)
        busy = tuple(b for b, k in zip(busy, keep) if k) if busy else ()
        dropped = throttled
    return Measurement(
        samples_ms=times,
        batch=sampler.batch,
        method=sampler.method,
        timer="events" if clock == "events" else "cupti",
        busy_ms=busy,
        events_ms=events.samples_ms if events is not None else (),
        telemetry=telemetry,
        throttled=throttled,
        dropped=dropped,
        settle_s=settle_s,
    )


def settles(options: TimingOptions, pilot_ms: float) -> bool:
    """Whether to warm up until the SM clock settles: `--settle on`, or `auto` for cold rows
    of launches from `batch_below_us` up (one launch a sample: the card idles between them
    while the L2 is flushed, and its clock wanders)."""
    auto = options.cold and pilot_ms * 1000.0 >= options.batch_below_us
    return options.settle == "on" or (options.settle == "auto" and auto)


def _prepare(
    backend: Backend,
    call: Callable[[], None],
    options: TimingOptions,
    scope: Scope,
    reset: Callable[[], None] | None = None,
    clock: str = "events",
) -> tuple[Sampler, float | None]:
    """Warm up, take the pilot, settle the clock when asked, and return the sampler with its
    batch size (and the seconds settling took, None when it did not)."""
    _warm_up(backend, call, options.warmup, scope)
    single = backend.sampler(call, 1, options.cold, scope, reset)
    pilot = _pilot(single)
    settled = None
    gauge = backend.gauge()
    if gauge is not None and settles(options, pilot):

        def busy(seconds: float) -> None:  # back-to-back calls, in the variant's ranges
            with scope():
                for _ in range(max(1, math.ceil(seconds * 1e3 / max(pilot, 1e-3)))):
                    backend.run(call)
            backend.synchronize()

        settled = settle(busy, gauge)
    batch = batch_size(pilot, options)
    if batch == 1 and clock == "events":  # the pilot's sampler is this one: made once (the
        return single, settled  # CuPy backend's costs a call, to size its spin: 1.9 s at worst)
    return backend.sampler(call, batch, options.cold, scope, reset, kernel_clock=clock != "events"), settled


def _warm_up(backend: Backend, call: Callable[[], None], calls: int, scope: Scope) -> None:
    """`calls` launches of `call`, or only the first where it takes `LONG_CALL_S` or more
    (host clock, to the end of the launch's work)."""
    for n in range(calls):
        start = time.perf_counter()
        with scope():
            backend.run(call)
        if n == 0:
            backend.synchronize()
            if time.perf_counter() - start >= LONG_CALL_S:
                return
    backend.synchronize()


def _pilot(sampler: Sampler) -> float:
    """The fastest of `PILOT_SAMPLES` single-launch samples (ms), or the first that takes
    `LONG_CALL_S` or more."""
    taken = [sampler()]
    while len(taken) < PILOT_SAMPLES and taken[-1] < LONG_CALL_S * 1e3:
        taken.append(sampler())
    return min(taken)


def measure_interleaved(
    backend: Backend,
    calls: list[tuple[Callable[[], None], Scope, Callable[[], None] | None]],
    options: TimingOptions,
) -> list[Measurement]:
    """Time several calls (the variants of one shape) with their samples taken in turn,
    A B C A B C ..., so that clock and thermal drift fall on all of them alike. Each call
    keeps its own batch size and stopping rule; one that is done drops out of the rotation."""
    options = sampling_options(backend, options)
    clock = clock_of(backend, options)
    events: list[Measurement | None] = [None] * len(calls)
    if clock == "both":  # the events clock alone first, interleaved as asked
        events = list(measure_interleaved(backend, calls, replace(options, timer="events")))
    with _session(backend, clock):
        prepared = [_prepare(backend, call, options, scope, reset, clock) for call, scope, reset in calls]
        samplers = [sampler for sampler, _ in prepared]
        watches = [_watch(backend, options) for _ in samplers]
        samples: list[list[float]] = [[] for _ in samplers]
        spent_s = [0.0] * len(samplers)
        done = [False] * len(samplers)
        while not all(done):
            for index, sampler in enumerate(samplers):
                if done[index]:
                    continue
                ms = sampler()
                samples[index].append(ms)
                watch = watches[index]
                if watch is not None:
                    watch.sample_done()
                spent_s[index] += ms * sampler.batch / 1000.0
                count = counted(len(samples[index]), sampler.batch, clock)
                done[index] = enough(count, spent_s[index], options, samples[index])
        return [
            _measurement(sampler, taken, clock, e, w, options, settled)
            for taken, (sampler, settled), e, w in zip(samples, prepared, events, watches)
        ]
