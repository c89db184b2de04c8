"""cudabench.timeit against Nsight Compute on a CuPy sum, cold (issue 15's check).

    python3 scripts/timeit_check.py time            # cudabench.timeit, cold, per shape
    ncu --nvtx --nvtx-include "cudabench@timeit/" --cache-control all --clock-control none \\
        --metrics gpu__time_duration.sum --csv python3 scripts/timeit_check.py ncu

`ncu` mode makes CALLS calls of each shape inside an NVTX range `timeit/<shape>`; the kernels'
durations summed per range and divided by CALLS are ncu's time for one call.
"""

import sys

import cupy as cp
import nvtx

import cudabench

SHAPES = {"16777216": (1 << 24,), "442368x128": (442368, 128)}
CALLS = 5

for name, shape in SHAPES.items():
    x = cp.random.default_rng(0).random(shape, dtype=cp.float32) * 2 - 1
    sum_it = (lambda x=x: x.sum()) if len(shape) == 1 else (lambda x=x: x.sum(axis=-1))
    if sys.argv[1] == "time":
        m = cudabench.timeit(sum_it, cold=True, min_time_s=0.2)
        print(
            f"timeit {name} median_us {m.median_ms * 1e3:.2f} spread {100 * m.spread:.1f}% "
            f"samples {len(m.samples_ms)} method {m.method}"
        )
    else:
        sum_it()
        cp.cuda.Device().synchronize()
        with nvtx.annotate("timeit", domain="cudabench"), nvtx.annotate(name, domain="cudabench"):
            for _ in range(CALLS):
                sum_it()
            cp.cuda.Device().synchronize()
