# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`fma`: the fp32 FMA rate (`cudabench ceilings`): out = x + iters * 2^-10 by `iters`
dependent FMAs a thread, in registers.

Kernel arguments: `(const float* x, float* out, long long n, int iters, float one, float
step)`; grid rule `elements`, a thread per element.
"""

from __future__ import annotations

import math
from typing import Any

from cudabench.op import Dims, Op, Scalar, Shape, Tensor, elements, uniform

UNIT_ROUNDOFF = 2.0**-24
FMA_ITERS = 1024  # dependent FMAs a thread: 2048 flops for 8 bytes, far past any ridge point
FMA_STEP = 2.0**-10  # x + k * 2^-10 stays exact in float32 for |x| < 4 and k <= 1024


class Fma(Op):
    name = "fma"
    about = f"out = x + {FMA_ITERS} x 2^-10 by {FMA_ITERS} dependent fp32 FMAs a thread (the fp32 ceiling)"
    dims = ("n",)
    ranks = (1,)
    example = "2^24 (threads)"
    # |x| < 3: x + 1 stays under 4, where adding 2^-10 is exact in float32
    inputs = (Tensor("x", "n", fill=uniform(-3.0, 3.0)),)
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"), Scalar("iters", "int", FMA_ITERS), Scalar("one", "float", 1.0),
               Scalar("step", "float", FMA_STEP))
    rules = {"elements": elements()}
    requirements: tuple[str, ...] = ()
    compute_bound = True

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        return 4 * 2 * math.prod(shape)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return 4 * math.prod(shape)

    def flop_count(self, dims: Dims) -> int:
        return 2 * FMA_ITERS * dims.n

    def device_bytes(self, shape: Shape) -> int:
        return 4 * 2 * math.prod(shape) + 3 * 8 * math.prod(shape) + (64 << 20)

    def reference(self, xp: Any, x: Any) -> Any:
        return x + FMA_ITERS * FMA_STEP

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        # Each step is exact when x is a multiple of its ulp near 4 (the inputs are); a few
        # ulps allow for any other x, and one FMA too few (2^-10) is still far outside.
        return 4 * UNIT_ROUNDOFF * xp.maximum(xp.abs(ref), 1.0)
