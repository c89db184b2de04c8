"""`--clocks`: the SM clock held where the user asked for the run, and always given back.

Policies: `default` (the driver's own clocks: nothing locked), `base` (the default application
clock), `max` (the boost limit) or a number of MHz. Locking needs root or an administrator's
permission (NVML's nvmlDeviceSetGpuLockedClocks); where it is refused the run goes on at the
driver's clocks and its metadata says so in one line.

Giving it back: the session (this process, not a worker) locks and resets, in a `finally`,
so Ctrl-C, an exception or a worker that crashed still end with the clock reset. Before
locking it writes a marker file naming the GPU (`$CUDABENCH_STATE`, default
~/.cache/cudabench, `clock-locks/<pci bus id>.json`); a process killed outright leaves the
marker, and the next session resets that GPU's clock first (`restore_left`) and says so,
unless the process that wrote it is still running (a run beside this one holds the lock).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from cudabench.backends.nvml import ClockLockError, Gauge

POLICIES = ("default", "base", "max")


def parse_clocks(text: str) -> str:
    """A policy as given (`default`, `base`, `max` or MHz); ValueError in one line."""
    value = str(text).strip().lower()
    if value in POLICIES or (value.isdigit() and 100 <= int(value) <= 10_000):
        return value
    raise ValueError(f"--clocks {text!r}: choose default, base, max or a clock in MHz (e.g. 1755)")


def target_mhz(policy: str, gauge: Gauge) -> int | None:
    """The SM clock a policy holds on this GPU; None for `default`."""
    if policy == "default":
        return None
    base, top = gauge.sm_clocks()
    return {"base": base, "max": top}.get(policy) or int(policy)


def state_dir() -> Path:
    return Path(os.environ.get("CUDABENCH_STATE") or Path.home() / ".cache" / "cudabench") / "clock-locks"


def _marker(pci_bus_id: str) -> Path:
    return state_dir() / f"{pci_bus_id.replace(':', '_') or 'gpu'}.json"


@contextlib.contextmanager
def held(gauge: Gauge, pci_bus_id: str, policy: str) -> Iterator[str]:
    """Hold the SM clock at the policy's MHz while inside; yields '' when held (or `default`),
    else the one line saying why not. Always reset on the way out."""
    mhz = target_mhz(policy, gauge)
    if mhz is None:
        yield ""
        return
    marker = _marker(pci_bus_id)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(
        json.dumps(
            {
                "pci_bus_id": pci_bus_id,
                "mhz": mhz,
                "pid": os.getpid(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )
    try:
        gauge.lock_sm_clock(mhz)
    except ClockLockError as exc:
        marker.unlink(missing_ok=True)
        yield f"--clocks {policy}: {exc}; the run used the driver's clocks"
        return
    try:
        yield ""
    finally:
        try:
            gauge.reset_sm_clock()
        finally:
            marker.unlink(missing_ok=True)


def _running(pid: object) -> bool:
    """Whether process `pid` is alive on this machine (signal 0 checks without sending)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def restore_left(open_gauge: Callable[[str], Gauge | None]) -> list[str]:
    """Reset every SM clock a run locked and never gave back (its marker is still there and
    the process that wrote it is gone); one line each of what was done."""
    folder = state_dir()
    notes = []
    for marker in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            left = json.loads(marker.read_text())
            pci, mhz = str(left["pci_bus_id"]), int(left["mhz"])
        except (OSError, ValueError, KeyError, TypeError):
            marker.unlink(missing_ok=True)
            continue
        if _running(left.get("pid")):
            continue  # a run still going holds this lock: it gives it back itself
        gauge = open_gauge(pci)
        if gauge is None:
            continue  # another machine's GPU, or NVML gone: leave the marker
        try:
            gauge.reset_sm_clock()
        except ClockLockError as exc:
            notes.append(
                f"GPU {pci}: an earlier run left its SM clock locked at {mhz} MHz "
                f"and it could not be reset: {exc}"
            )
            continue
        marker.unlink(missing_ok=True)
        notes.append(
            f"GPU {pci}: an earlier run (pid {left.get('pid')}) ended without giving "
            f"back its SM clock lock ({mhz} MHz); reset now"
        )
    return notes
