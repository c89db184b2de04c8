"""A fake NVML gauge (nvml.Gauge) for GPU-free tests: a virtual clock the fake backend's
launches advance, an energy counter that integrates a set power over it, an SM clock that can
ramp, slowdowns planted at chosen polls (seen in the reasons, or only in the violation counter
when they ended before the poll), a temperature that falls while the caller waits, and an SM
clock lock that can be refused (no permission)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cudabench.backends.nvml import ClockLockError, Reading

READ_S = 1e-6  # virtual time one reading takes
MEM_MHZ = 2619
COOLING_C_PER_S = 2.0  # how fast the idle card cools
FACTS = {"power_limit_w": "700", "ecc": "on", "mig": "off"}


class FakeGauge:
    def __init__(
        self,
        power_w: float = 300.0,
        sm_mhz: int | Callable[[float], int] = 1980,
        temp_c: float = 40.0,
        energy: bool = True,
        slowdowns: Iterable[int] = (),
        ended: Iterable[int] = (),
        can_lock: bool = True,
        energy_period_s: float = 0.005,
        read_s: float = READ_S,
    ) -> None:
        self.t = 0.0  # virtual seconds
        self.power_w = power_w
        self._sm = sm_mhz
        self.temp = temp_c
        self.energy = energy
        self.slowdowns = set(slowdowns)  # quick() polls (0, 1, ...) that see a slowdown
        self.ended = set(ended)  # polls after a slowdown that ended: only the counter moved
        self.polls = 0
        self._slow_ns = 0
        self.can_lock = can_lock
        self.locked: int | None = None
        self.lock_calls: list[int | None] = []  # every lock (MHz) and reset (None), in order
        self._energy_j = 0.0
        self.energy_period = energy_period_s  # the counter moves in steps, this often
        self.read_s = read_s  # what one reading of the energy counter takes
        self.energy_reads = 0  # how often the counter was read (it is slow on a real card)
        self._counted_j, self._counted_at = 0.0, 0.0

    # the virtual clock ---------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """GPU work (the fake backend calls this for each launch): time and energy."""
        self.t += seconds
        self._energy_j += self.power_w * seconds

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        """Idle: time passes, the card cools."""
        self.t += seconds
        self.temp -= COOLING_C_PER_S * seconds

    # the Gauge interface -------------------------------------------------------------------

    def energy_mj(self) -> int | None:
        """The counter as of its last update (it updates every `energy_period` seconds)."""
        self.energy_reads += 1
        if not self.energy:
            return None
        self.t += self.read_s  # a slow read: time passes (the fake GPU's work is already done)
        if self.t - self._counted_at >= self.energy_period:
            self._counted_j = self._energy_j
            self._counted_at = self.t - (self.t % self.energy_period)
        return int(self._counted_j * 1000)

    def sm_mhz(self) -> int:
        clock = self.locked or (self._sm(self.t) if callable(self._sm) else self._sm)
        return int(clock)

    def quick(self) -> Reading:
        self.t += self.read_s
        slowed = self.polls in self.slowdowns
        if slowed or self.polls in self.ended:
            self._slow_ns += 1_000_000
        self.polls += 1
        return Reading(
            self.t,
            sm_mhz=self.sm_mhz(),
            reasons=("sw power cap",) if slowed else (),
            slowdown_ns=self._slow_ns,
        )

    def read(self, energy: bool = True) -> Reading:
        fast = self.quick()
        return Reading(
            fast.t_s,
            sm_mhz=fast.sm_mhz,
            mem_mhz=MEM_MHZ,
            temp_c=round(self.temp),
            energy_mj=self.energy_mj() if energy else None,
            power_w=self.power_w if energy else None,
            reasons=fast.reasons,
            slowdown_ns=fast.slowdown_ns,
        )

    def facts(self) -> dict[str, str]:
        return dict(FACTS)

    def sm_clocks(self) -> tuple[int, int]:
        return (1590, 1980)

    def lock_sm_clock(self, mhz: int) -> None:
        if not self.can_lock:
            raise ClockLockError(
                f"cannot lock the SM clock at {mhz} MHz: NVML says Insufficient "
                "Permissions (locking needs root or an administrator's permission)"
            )
        self.locked = mhz
        self.lock_calls.append(mhz)

    def reset_sm_clock(self) -> None:
        self.locked = None
        self.lock_calls.append(None)
