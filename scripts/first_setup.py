"""A worker's first configuration, taken apart: issue 43's per-worker fixed cost.

    python3 scripts/first_setup.py [OP] [SHAPE] [VARIANT]      (default: reduce 2^24 float4)

In a fresh process, as a worker starts: open the backend, then run one job of one
configuration three times (quick search timing, no baselines) and print each run's set-up
and timing; the first run under cProfile (its top entries by cumulative time), with an
import hook that prints the stack of the first import of `cupyx` or `scipy` made inside
the job (what CuPy loads lazily on a first call: 0.4 s of the first set-up until the backend
imported cupyx as it opens; silent since). Run it on a GPU machine twice: the first run fills
the CuPy and cudabench caches, the second shows a worker's first set-up with warm caches
(docs/guide/tuning.md, "Measured: the search's pace").
"""

from __future__ import annotations

import builtins
import cProfile
import dataclasses
import pstats
import sys
import time
import traceback
from typing import Any

from cudabench.backends import open_backend
from cudabench.core.shapes import parse_shape
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import Runner
from cudabench.usecases.flow import Selection, planned
from cudabench.usecases.observe import Silent

LAZY = ("cupyx", "scipy")


def main() -> None:
    op, shape, variant = (sys.argv[1:] + ["reduce", "2^24", "float4"][len(sys.argv) - 1 :])[:3]
    begin = time.perf_counter()
    backend = open_backend(device=0)
    print(f"backend open: {time.perf_counter() - begin:.3f} s")
    work = planned(Selection(op, shapes=(parse_shape(shape),), variants=(variant,)), Silent())
    quick = TimingOptions(warmup=1, min_samples=6, min_time_s=0.005, batch_target_us=500.0, watch=False)
    job = dataclasses.replace(work.jobs[0], baselines=(), timing=quick)
    runner = Runner(backend)
    real = builtins.__import__
    told: list[str] = []

    def hook(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(LAZY) and not told:
            told.append(name)
            print(f"first import of {name}, from:")
            traceback.print_stack(limit=12)
        return real(name, *args, **kwargs)

    profile = cProfile.Profile()
    builtins.__import__ = hook
    for run in range(3):
        begin = time.perf_counter()
        if run == 0:
            profile.enable()
        (row,) = runner.run_job(job)
        if run == 0:
            profile.disable()
            builtins.__import__ = real
        print(
            f"run {run + 1}: {time.perf_counter() - begin:.3f} s, {row.status.value}, "
            f"set-up {row.setup_s or 0:.4f} s, timing {row.measure_s or 0:.4f} s"
        )
    pstats.Stats(profile).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
