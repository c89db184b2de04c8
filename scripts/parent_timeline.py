"""Where a command's own part goes: a timeline of the parent process of `cudabench run` or
`tune` (issue 45: the wall less the GPUs' span).

    python3 scripts/parent_timeline.py run configs/seeds.yaml --max-time 1 --devices 0,1

runs the command as `cudabench` would (the early workers included) and writes to stderr,
each line `@T <seconds since this script started> <event>`: the pool opening and each plain
worker ready, each successor heard, the sweep's rounds, the first row heard, the results
written, the pool closing; then, per method, the calls and seconds of the parent's work
(`tally`: the sinks, a round's messages, the successors' take-overs). The GPUs' span is the
run's balance note (several GPUs); the rest of the wall is the command's own part. Used on
the H200 machines (docs/guide/running.md, "Measured: the seeds sweep"); the methods it
wraps are named below, and tests/test_parent_timeline.py holds them to the code.
"""

from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.util
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

T0 = time.monotonic()
_tallies: dict[str, list[float]] = {}  # name -> [calls, seconds, longest]
_rows = {"first": 0.0, "last": 0.0, "heard": 0.0}


def log(event: str) -> None:
    print(f"@T {time.monotonic() - T0:7.3f} {event}", file=sys.stderr, flush=True)


def _around(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """The method with its start and end logged."""

    @functools.wraps(method)
    def inner(*args: Any, **kwargs: Any) -> Any:
        log(f"{name} begin")
        try:
            return method(*args, **kwargs)
        finally:
            log(f"{name} end")

    return inner


def _tally(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """The method with its calls and seconds added up."""

    @functools.wraps(method)
    def inner(*args: Any, **kwargs: Any) -> Any:
        begin = time.monotonic()
        try:
            return method(*args, **kwargs)
        finally:
            took = time.monotonic() - begin
            tally = _tallies.setdefault(name, [0.0, 0.0, 0.0])
            tally[0] += 1
            tally[1] += took
            tally[2] = max(tally[2], took)

    return inner


def _pool(module: ModuleType) -> None:
    pool = module.WorkerPool
    pool.open = _around("pool.open", pool.open)
    pool.close = _around("pool.close", pool.close)
    pool.take_over = _tally("pool.take_over", pool.take_over)
    await_ready = pool._await_ready

    def ready(self: Any, worker: Any) -> int:
        count = await_ready(self, worker)
        log(f"worker for GPU {worker.device} ready")
        return int(count)

    pool._await_ready = ready


def _sweep(module: ModuleType) -> None:
    sweep = module.Sweep
    sweep.run = _around("sweep.run", sweep.run)
    sweep.finish = _around("sweep.finish", sweep.finish)
    span = sweep._span

    def heard(self: Any, row: Any) -> None:
        now = time.monotonic()
        if not _rows["heard"]:
            _rows["first"] = now
            log(f"first row heard: {row.op} {row.variant}, set-up {row.setup_s or 0:.3f} s")
        _rows["last"], _rows["heard"] = now, _rows["heard"] + 1
        span(self, row)

    sweep._span = heard


def _successors(module: ModuleType) -> None:
    successors = module.Successors
    hear = successors.hear

    def heard(self: Any, worker: Any, gpu_name: Any) -> None:
        log(f"successor for GPU {worker.device} heard")
        hear(self, worker, gpu_name)

    successors.hear = heard


def _rounds(module: ModuleType) -> None:
    module.Round._receive = _tally("round._receive", module.Round._receive)


def _sinks(module: ModuleType) -> None:
    for name in ("ResultsFiles", "HistoryRecord", "Progress"):
        sink = getattr(module, name)
        for method in ("row", "job_done", "finish"):
            setattr(sink, method, _tally(f"{name}.{method}", getattr(sink, method)))


WRAPPED: dict[str, Callable[[ModuleType], None]] = {
    "cudabench.execution.pool": _pool,
    "cudabench.execution.sweep": _sweep,
    "cudabench.execution.successors": _successors,
    "cudabench.execution.rounds": _rounds,
    "cudabench.execution.sinks": _sinks,
}


class _Hook(importlib.abc.MetaPathFinder):
    """Wraps each module of WRAPPED as it is first imported, so that the command's own
    order of imports (and its early workers) is what it would be without this script."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if name not in WRAPPED:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            WRAPPED[name](module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _summary() -> None:
    for name, (calls, seconds, longest) in sorted(_tallies.items()):
        log(f"tally {name}: {calls:.0f} calls, {seconds:.3f} s, longest {longest * 1000:.1f} ms")
    rows = f"{_rows['heard']:.0f} rows heard over {_rows['last'] - _rows['first']:.3f} s"
    log(f"command done: {rows}")


def main() -> None:
    print(f"@EPOCH {time.time():.3f}", file=sys.stderr, flush=True)  # against a shell's clock
    sys.meta_path.insert(0, _Hook())
    sys.argv = ["cudabench", *sys.argv[1:]]
    atexit.register(_summary)
    import cudabench

    cudabench._command()


if __name__ == "__main__":
    main()
