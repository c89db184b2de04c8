"""The card's own gauges, through NVML (nvidia-ml-py): energy, power, clocks, temperature, the
slowdown reasons and counters, the facts a run's fingerprint needs, and the SM clock lock.

`Gauge` is the interface the rest of cudabench reads (telemetry.py, clocklock.py,
fingerprint.py); `NvmlGauge` is the real one and backends/fake_nvml.py the test double. A
reading a GPU or driver does not answer is None, never a guess.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Any, Protocol

from cudabench.core.records import DeviceInfo

# NVML clock event ("throttle") reasons that mean the GPU was held below the clock it wanted
# (nvmlClocksEventReason*; idle, application clocks and sync boost are not slowdowns)
SLOWDOWN_REASONS = {
    0x4: "sw power cap",
    0x8: "hw slowdown",
    0x20: "sw thermal",
    0x40: "hw thermal",
    0x80: "hw power brake",
}


def reason_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in SLOWDOWN_REASONS.items() if mask & bit)


@dataclass(frozen=True)
class Reading:
    """One look at the gauges. `slowdown_ns`: NVML's cumulative time the card was held back
    for power or heat (its violation counters), which catches a slowdown between two readings;
    `reasons`: the slowdowns active at this instant."""

    t_s: float  # time.perf_counter() of the reading
    sm_mhz: int | None = None
    mem_mhz: int | None = None
    temp_c: int | None = None
    energy_mj: int | None = None  # the card's total-energy counter since the driver loaded
    power_w: float | None = None
    reasons: tuple[str, ...] = ()
    slowdown_ns: int | None = None


class ClockLockError(RuntimeError):
    """The SM clock cannot be locked or reset here; the message is one line."""


class Gauge(Protocol):
    def now(self) -> float:
        """The gauge's clock, seconds (time.perf_counter; the fake's is virtual)."""

    def sleep(self, seconds: float) -> None:
        """Wait, idle (a cool-down)."""

    def read(self, energy: bool = True) -> Reading:
        """Every gauge at once (one NVML call each); `energy=False` leaves out the energy
        counter and the power, which the watch does not need (on an H100, a loop that read the
        counter between 1 ms replays left the GPU idle about 80% of the time)."""

    def energy_mj(self) -> int | None:
        """The total-energy counter alone (mJ since the driver loaded), None if missing."""

    def quick(self) -> Reading:
        """What a sample-by-sample watch needs, cheaply: the SM clock, the slowdown counters
        and reasons."""

    def facts(self) -> dict[str, str]:
        """What the card is set to: power limit, ECC and MIG mode (text, '' where unknown)."""

    def sm_clocks(self) -> tuple[int, int]:
        """(base, max) SM clock in MHz: the default application clock and the boost limit."""

    def lock_sm_clock(self, mhz: int) -> None:
        """Hold the SM clock at `mhz` (ClockLockError where NVML refuses)."""

    def reset_sm_clock(self) -> None:
        """Give the SM clock back to the driver (ClockLockError where NVML refuses)."""


def _or_none(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # not supported on this GPU or driver: no reading, not a guess
        return None


class NvmlGauge:
    """The gauges of the GPU at `pci_bus_id` (CUDA's and NVML's device orders can differ)."""

    def __init__(self, pci_bus_id: str) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons

    def _slowdown_ns(self) -> int | None:
        n, total = self.nvml, 0
        for policy in (n.NVML_PERF_POLICY_POWER, n.NVML_PERF_POLICY_THERMAL):
            status = _or_none(n.nvmlDeviceGetViolationStatus, self.handle, policy)
            if status is None:
                return None
            total += int(status.violationTime)
        return total

    def now(self) -> float:
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def energy_mj(self) -> int | None:
        value = _or_none(self.nvml.nvmlDeviceGetTotalEnergyConsumption, self.handle)
        return int(value) if value is not None else None

    def quick(self) -> Reading:
        n = self.nvml
        mask = _or_none(self._reasons, self.handle)
        sm = _or_none(n.nvmlDeviceGetClockInfo, self.handle, n.NVML_CLOCK_SM)
        return Reading(
            time.perf_counter(),
            sm_mhz=sm,
            reasons=reason_names(int(mask or 0)),
            slowdown_ns=self._slowdown_ns(),
        )

    def read(self, energy: bool = True) -> Reading:
        n, h = self.nvml, self.handle
        power = _or_none(n.nvmlDeviceGetPowerUsage, h) if energy else None
        fast = self.quick()
        return Reading(
            fast.t_s,
            sm_mhz=fast.sm_mhz,
            mem_mhz=_or_none(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_MEM),
            temp_c=_or_none(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU),
            energy_mj=self.energy_mj() if energy else None,
            power_w=power / 1000.0 if power is not None else None,
            reasons=fast.reasons,
            slowdown_ns=fast.slowdown_ns,
        )

    def facts(self) -> dict[str, str]:
        n, h = self.nvml, self.handle
        limit = _or_none(n.nvmlDeviceGetEnforcedPowerLimit, h)
        ecc = _or_none(n.nvmlDeviceGetEccMode, h)
        mig = _or_none(n.nvmlDeviceGetMigMode, h)
        facts = {
            "power_limit_w": f"{limit / 1000:.0f}" if limit is not None else "",
            "ecc": ("on" if ecc[0] else "off") if ecc else "",
            "mig": ("on" if mig[0] else "off") if mig else "",
        }
        return facts

    def sm_clocks(self) -> tuple[int, int]:
        n, h = self.nvml, self.handle
        top = int(n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM))
        base = _or_none(n.nvmlDeviceGetDefaultApplicationsClock, h, n.NVML_CLOCK_SM)
        return (int(base) if base else top, top)

    def lock_sm_clock(self, mhz: int) -> None:
        try:
            self.nvml.nvmlDeviceSetGpuLockedClocks(self.handle, mhz, mhz)
        except self.nvml.NVMLError as exc:
            raise ClockLockError(
                f"cannot lock the SM clock at {mhz} MHz: NVML says {exc} "
                "(locking needs root or an administrator's permission)"
            ) from exc

    def reset_sm_clock(self) -> None:
        try:
            self.nvml.nvmlDeviceResetGpuLockedClocks(self.handle)
        except self.nvml.NVMLError as exc:
            raise ClockLockError(f"cannot reset the SM clock: NVML says {exc}") from exc


def with_facts(info: DeviceInfo, gauge: Gauge | None) -> DeviceInfo:
    """The device record with what the card is set to (power limit, ECC, MIG)."""
    if gauge is None:
        return info
    facts = gauge.facts()
    return dataclasses.replace(
        info, power_limit_w=facts.get("power_limit_w", ""), ecc=facts.get("ecc", ""), mig=facts.get("mig", "")
    )


def open_gauge(pci_bus_id: str) -> NvmlGauge | None:
    """The GPU's gauges, or None where NVML is missing, does not see the GPU, or is turned off
    (CUDABENCH_NVML=off: no telemetry columns, no watch; what a run costs without them)."""
    if os.environ.get("CUDABENCH_NVML", "").strip().lower() in ("off", "0", "no", "false"):
        return None
    try:
        return NvmlGauge(pci_bus_id)
    except Exception:
        return None
