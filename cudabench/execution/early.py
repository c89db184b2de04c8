"""Plain workers started before the command has loaded.

`cudabench run` and `cudabench tune` spend 0.85 to 1.3 s on an H200 machine importing their
modules and planning before the pool opens, and a plain worker takes 1.4 to 2.9 s to say
ready (Python, CuPy, cupyx, a CUDA context), which the pool waits for. Started first, from the
command line's own words (`cudabench._command` reads them: the command, `--devices`,
`--timer`), the two overlap. The pool (pool.py) adopts a worker started here for its device
and clock; one it does not adopt (other devices or another clock than the command settles
on, a usage error, a command that ends before any pool opens) is killed when the pool has
opened, or at exit.

The successors (torch) are not started here: which libraries the jobs need is the plan's to
say.
"""

from __future__ import annotations

import atexit

from cudabench.execution.worker_process import Worker, kill, spawn, visible_gpu_count_list

_started: dict[tuple[int, str], Worker] = {}


def start(devices: tuple[int, ...] | None, timer: str) -> int:
    """Start a plain worker for each device (None: every GPU of the host, where it can be
    counted without a CUDA context; else none) with the clock `timer`; how many started."""
    chosen = devices if devices is not None else tuple(visible_gpu_count_list() or ())
    for device in chosen:
        if (device, timer) not in _started:
            _started[(device, timer)] = spawn(device, timer)
    return len(chosen)


def take(device: int, timer: str) -> Worker | None:
    """The worker started early for this device and clock, now the caller's; None if none."""
    return _started.pop((device, timer), None)


def discard() -> None:
    """Kill the workers started early that no pool took."""
    while _started:
        kill(_started.popitem()[1])


atexit.register(discard)  # a command that ended before any pool opened
