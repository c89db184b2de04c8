"""The Python API: the CLI's own use cases and clock, for notebooks, scripts and performance
tests.

    import cudabench
    df = cudabench.run("reduce", shapes=["2^24", (442368, 128)], variants=["float4"])
    m = cudabench.timeit(lambda: x.sum(), cold=True)      # any CuPy or torch callable
    m.median_ms, m.spread, m.samples_ms
    best = cudabench.tune("reduce", shapes=["2^24"], variants=["float4"], budget=50)
    prof = cudabench.profile("reduce", shapes=["2^24"], variants=["float4"])   # under ncu
    roof = cudabench.ceilings()                            # this GPU's measured ceilings
    cmp = cudabench.compare("results/a.json", "results/b.json")
    cmp.gate.exit_status, cmp.gate.reasons, cmp.counts     # the CI gate's verdict as data
    hist = cudabench.history("reduce", variant="float4")   # a case's runs, regressions marked

Each function is a thin adapter over one use case (cudabench/usecases/): it takes Python
values, calls the use case with no observer (nothing is printed), and returns its record or
a DataFrame. `run` is `cudabench run` without the terminal: the same plan, worker processes,
validation, timing and results files (results/<time>_<op>.csv/.json), returning the rows as
the DataFrame the CSV holds. `timeit` gives a callable the measure module's warm-up,
CUDA-graph batching, L2 flush (`cold=True`) and stopping rule (the peers it replaces:
triton.testing.do_bench, cupyx.profiler.benchmark). Bad input raises `cudabench.SweepError`
(a `cudabench.UsageError`: one line). Importing `cudabench` still needs neither CuPy nor a
GPU.

The package: arguments.py turns Python values into the use cases' records, sweeps.py holds
run, tune, profile and verify, records.py ceilings, compare and history, clock.py timeit.
"""

from cudabench.api.clock import timeit
from cudabench.api.records import ceilings, compare, history
from cudabench.api.sweeps import profile, run, tune, verify
from cudabench.usecases.compare_runs import Comparison
from cudabench.usecases.flow import Failed

__all__ = [
    "Comparison",
    "Failed",
    "ceilings",
    "compare",
    "history",
    "profile",
    "run",
    "timeit",
    "tune",
    "verify",
]
