"""What the card did while a row was timed, from its own gauges (nvml.Gauge), and the rules
that act on it.

- `Watch`: over the timed samples, the SM clock (lowest, median), the memory clock and the
  temperature at both ends, and every sample taken while the card was slowed for power or heat
  marked. The gauges are polled at most every POLL_S, and at most every POLL_COST times a
  poll's own duration (a poll covers the samples since the last one), so watching costs at
  most about 2% of the sampling's time however slow NVML answers; NVML's violation counters (the
  cumulative time held back for power and for heat) catch a slowdown between two polls, its
  reasons name it.
- `energy_per_call`: the card's total-energy counter across a window of back-to-back calls
  (hot, queued ahead so the GPU never waits for the host's reads) from one of its updates to
  a later one, divided by the calls the GPU finished in between; where the counter is
  missing, the average of the power readings at both ends of a fixed window times the window. The window
  is not the timed samples themselves: a single-launch sample holds the GPU with a 50 us
  spin before the launch (measure.py), whose energy is not the kernel's.
- `settle`: warm-up until the SM clock's median over consecutive windows stops moving (within
  SETTLE_MHZ, SETTLE_STABLE times in a row), capped at SETTLE_CAP_S.
- `cool_down`: wait, idle, until the GPU is at or below a temperature, capped at COOLDOWN_CAP_S.
"""

from __future__ import annotations

import collections
import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cudabench.backends.base import MAX_BATCH, Backend, Pending
from cudabench.backends.nvml import Gauge, Reading
from cudabench.core.records import ResultRow, Status
from cudabench.core.timing import Measurement, SampleTelemetry, TimingOptions, median

SETTLE = ("auto", "on", "off")  # --settle
POLL_S = 0.002  # the watch reads the gauges at most this often
POLL_COST = 50  # and at most once every POLL_COST times a poll's own duration
THROTTLED_NOTE = 0.03  # a row with more than this share of its samples slowed gets a note
# The energy window (energy_per_call): graphs of about REPLAY_MS of launches, QUEUE_MS of them
# queued ahead, from one counter update to the first after ENERGY_UPDATES more and ENERGY_MIN_S
# (or LATENCY_FACTOR reads' time); at most ENERGY_MAX_S. Without the counter, power readings
# across POWER_WINDOW_S.
REPLAY_MS = 1.0
QUEUE_MS = 20.0
ENERGY_UPDATES = 4
ENERGY_MIN_S = 0.05
LATENCY_FACTOR = 25
ENERGY_MAX_S = 2.0
POWER_WINDOW_S = 0.1
SETTLE_WINDOW_S = 0.05
SETTLE_MHZ = 15  # one step of the SM clock
SETTLE_STABLE = 2
SETTLE_CAP_S = 5.0
COOLDOWN_POLL_S = 0.5
COOLDOWN_CAP_S = 120.0


class Watch:
    """Marks the samples of one measurement (`sample_done` after each); `finish` -> record."""

    def __init__(self, gauge: Gauge, poll_s: float = POLL_S) -> None:
        self.gauge, self.poll_s = gauge, poll_s
        self.first = gauge.read(energy=False)  # clocks, temperature, slowdowns: no counter
        self._slow_ns = self.first.slowdown_ns
        self._polled_at = self.first.t_s
        self._samples = 0
        self.marked: list[bool] = []
        self.reasons: dict[str, None] = dict.fromkeys(self.first.reasons)
        self.clocks: list[int] = [self.first.sm_mhz] if self.first.sm_mhz else []

    def sample_done(self) -> None:
        self._samples += 1
        if self.gauge.now() - self._polled_at >= self.poll_s:
            asked = self.gauge.now()
            self._poll(self.gauge.quick())
            # a slow NVML is polled less often: at most 1/POLL_COST
            # of the sampling's time goes to watching
            self.poll_s = max(self.poll_s, (self.gauge.now() - asked) * POLL_COST)

    def _poll(self, r: Reading) -> None:
        counted = r.slowdown_ns is not None and self._slow_ns is not None and r.slowdown_ns > self._slow_ns
        slowed = bool(r.reasons) or counted
        self.marked += [slowed] * (self._samples - len(self.marked))
        self._slow_ns = r.slowdown_ns if r.slowdown_ns is not None else self._slow_ns
        self._polled_at = r.t_s
        self.reasons.update(dict.fromkeys(r.reasons))
        if r.sm_mhz:
            self.clocks.append(r.sm_mhz)

    def finish(self) -> SampleTelemetry:
        last = self.gauge.read(energy=False)
        self._poll(last)
        first = self.first

        def pair(a: int | None, b: int | None) -> tuple[int, int] | None:
            return (a, b) if a is not None and b is not None else None

        return SampleTelemetry(
            marked=tuple(self.marked),
            reasons=tuple(self.reasons),
            sm_mhz=pair(first.sm_mhz, last.sm_mhz),
            mem_mhz=pair(first.mem_mhz, last.mem_mhz),
            sm_min=min(self.clocks) if self.clocks else None,
            sm_median=round(median([float(c) for c in self.clocks])) if self.clocks else None,
            temp_c=pair(first.temp_c, last.temp_c),
        )


def throttled_note(marked: int, total: int, reasons: tuple[str, ...], dropped: int) -> str:
    """The row's note when more than THROTTLED_NOTE of its samples were slowed ('' if not)."""
    if total == 0 or marked <= THROTTLED_NOTE * total:
        return ""
    why = f" ({', '.join(reasons)})" if reasons else ""
    if dropped:
        return f"{marked} of {total} samples taken while the GPU was slowed{why}: left out"
    if marked == total:
        return f"every sample taken while the GPU was slowed{why}"
    return (
        f"{marked} of {total} samples taken while the GPU was slowed{why}: --drop-throttled leaves them out"
    )


@dataclass(frozen=True)
class Energy:
    mj_per_call: float
    power_w: float
    window_s: float
    calls: int
    counter: bool  # the energy counter (True) or power readings times the window (False)


def energy_per_call(
    backend: Backend, call: Callable[[], None], gauge: Gauge, per_call_ms: float
) -> Energy | None:
    """Run `call` back to back and read the energy the card drew per call.

    Replays of about REPLAY_MS of launches are queued ahead (QUEUE_MS of work), so the GPU never
    idles while the host reads the counter (on an H100, reading it between synchronous 1 ms
    replays left the GPU about 80% idle). The counter moves in steps: the window opens at one of
    its updates and closes at the first update after ENERGY_UPDATES more and the window's
    length, and the calls in it are those the GPU had finished by each of the two updates
    (counted around the read that saw it). The window is at least ENERGY_MIN_S and
    LATENCY_FACTOR x one read's time, so that the uncertainty of where in a read the update fell
    stays a few percent. None where the card reports neither energy nor power, or the counter
    did not move often enough within ENERGY_MAX_S."""
    if per_call_ms <= 0:
        return None
    batch = max(1, min(MAX_BATCH, math.ceil(REPLAY_MS / per_call_ms)))
    sampler = backend.sampler(call, batch, False, contextlib.nullcontext)
    backend.synchronize()
    asked = gauge.now()
    last = gauge.energy_mj()
    if last is None:
        return _power_times_window(backend, sampler, batch, gauge, per_call_ms)
    window = max(ENERGY_MIN_S, LATENCY_FACTOR * (gauge.now() - asked))
    depth = max(2, math.ceil(QUEUE_MS / (batch * per_call_ms)))
    queue: collections.deque[Pending] = collections.deque()
    finished = 0

    def finished_now() -> int:
        nonlocal finished
        while queue and queue[0].done:
            queue.popleft()
            finished += 1
        return finished

    opened: tuple[float, int, float] | None = None  # (time, counter, calls) at an update
    updates = 0
    start = gauge.now()
    try:
        while gauge.now() - start < ENERGY_MAX_S:
            while len(queue) < depth:
                queue.append(sampler.enqueue())
            before = finished_now()
            counter, now = gauge.energy_mj(), gauge.now()
            calls = (before + finished_now()) / 2 * batch
            if counter is None or counter == last:
                continue
            last = counter
            if opened is None:
                opened = (now, counter, calls)
                continue
            updates += 1
            if updates >= ENERGY_UPDATES and now - opened[0] >= window and calls > opened[2]:
                joules = (counter - opened[1]) / 1e3
                elapsed = now - opened[0]
                return Energy(
                    joules * 1e3 / (calls - opened[2]),
                    joules / elapsed,
                    elapsed,
                    round(calls - opened[2]),
                    True,
                )
    finally:
        backend.synchronize()  # what is still queued runs out
    return None


def _power_times_window(
    backend: Backend, sampler: Callable[[], object], batch: int, gauge: Gauge, per_call_ms: float
) -> Energy | None:
    """No energy counter: the average of the power readings at both ends of a fixed window,
    times the window."""
    reps = max(1, math.ceil(POWER_WINDOW_S * 1e3 / (per_call_ms * batch)))
    start = gauge.read()
    for _ in range(reps):
        sampler()
    backend.synchronize()
    end = gauge.read()
    elapsed = end.t_s - start.t_s
    powers = [w for w in (start.power_w, end.power_w) if w is not None]
    if not powers or elapsed <= 0:
        return None
    watts = sum(powers) / len(powers)
    calls = reps * batch
    return Energy(watts * elapsed * 1e3 / calls, watts, elapsed, calls, False)


def settle(
    run_window: Callable[[float], None],
    gauge: Gauge,
    window_s: float = SETTLE_WINDOW_S,
    cap_s: float = SETTLE_CAP_S,
) -> float:
    """Launch (`run_window(seconds)` keeps the GPU busy about that long, polling nothing) until
    the SM clock's median over consecutive windows stops moving; the seconds it took."""
    start = gauge.now()
    last: float | None = None
    stable = 0
    while gauge.now() - start < cap_s:
        clocks: list[float] = []
        window_start = gauge.now()
        while gauge.now() - window_start < window_s:
            run_window(window_s / 10)
            clock = gauge.quick().sm_mhz
            if clock:
                clocks.append(clock)
        if not clocks:  # no clock to watch: nothing to settle on
            break
        now = median(clocks)
        stable = stable + 1 if last is not None and abs(now - last) <= SETTLE_MHZ else 0
        last = now
        if stable >= SETTLE_STABLE:
            break
    return gauge.now() - start


def cool_down(gauge: Gauge, target_c: int, cap_s: float = COOLDOWN_CAP_S) -> float:
    """Wait, idle, until the GPU is at or below `target_c`; the seconds waited."""
    start = gauge.now()
    while gauge.now() - start < cap_s:
        temp = gauge.read(energy=False).temp_c
        if temp is None or temp <= target_c:
            break
        gauge.sleep(COOLDOWN_POLL_S)
    return gauge.now() - start


# ---------------------------------------------------------------------- the row's columns


def missing_energy_note(row: ResultRow, timing: TimingOptions, in_place: bool) -> str:
    """The run's one note for an OK row that was asked for its energy and has none, saying why
    ('' where the row has its energy, or its own note already says why not)."""
    if (
        not timing.energy
        or row.status is not Status.OK
        or row.energy_mj is not None
        or "no energy" in row.notes
    ):
        return ""
    if timing.cold:
        return "energy: cold rows have none (back-to-back calls are not cold): leave out --cold"
    if in_place and not row.is_baseline:
        return (
            f"energy: {row.op}'s kernel rows have none: the op works in place and its input "
            "is restored before every call, which a window of back-to-back calls cannot do"
        )
    if row.sm_mhz_median is None:
        return "energy: none: NVML does not answer for this GPU (or CUDABENCH_NVML=off)"
    return (
        "energy: some rows have none: the card reported neither its energy counter moving "
        "nor its power within the window"
    )


def telemetry_fields(m: Measurement, cooldown_s: float | None = None) -> dict[str, Any]:
    """A timed row's telemetry columns: the card's state over its samples (clocks,
    temperatures, the slowdowns seen, how many samples were taken slowed and dropped),
    settling and cool-down times, and the note on slowed samples (`notes`)."""
    t = m.telemetry
    if t is None:
        return {"settle_s": m.settle_s, "cooldown_s": cooldown_s}
    total = len(m.samples_ms) + m.dropped
    return {
        "sm_mhz": t.sm_mhz,
        "mem_mhz": t.mem_mhz,
        "throttle": ", ".join(t.reasons),
        "throttled_samples": m.throttled,
        "dropped_samples": m.dropped,
        "sm_mhz_min": t.sm_min,
        "sm_mhz_median": t.sm_median,
        "temp_c": t.temp_c,
        "settle_s": m.settle_s,
        "cooldown_s": cooldown_s,
        "notes": throttled_note(m.throttled, total, t.reasons, m.dropped),
    }


def energy_fields(energy: Energy | None, figures: dict[str, Any]) -> dict[str, Any]:
    """A timed row's energy columns: energy per call, average power and work per joule (GB/J
    from its bytes moved, GFLOP/J from its GFLOP/s and time); none without a measurement."""
    if energy is None:
        return {}
    joules = energy.mj_per_call / 1e3
    moved, gflops, time_us = figures.get("bytes_moved"), figures.get("gflops"), figures.get("time_us")
    return {
        "energy_mj": energy.mj_per_call,
        "power_w": energy.power_w,
        "gb_per_j": moved / 1e9 / joules if moved and joules > 0 else None,
        "gflop_per_j": (gflops * time_us * 1e-6) / joules if gflops and time_us and joules > 0 else None,
    }
