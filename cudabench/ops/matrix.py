"""What the matrix ops share (kernels/gemv, kernels/sgemm): random inputs from their own
seeds, and the reference tolerance of a float32 dot product."""

from __future__ import annotations

import math
from typing import Any

from cudabench.spec import Shape

UNIT_ROUNDOFF = 2.0**-24


def uniform(xp: Any, shape: Shape, seed: int, low: float = -1.0, high: float = 1.0) -> Any:
    """float32 values uniform in [low, high) from a generator of their own seed."""
    x = xp.random.default_rng(seed).random(shape, dtype=xp.float32)
    x *= high - low
    x += low
    return x


def dot_tolerance(n: int) -> float:
    """Per-output tolerance factor for a float32 sum of n products, times sum |a_i b_i|.
    Reduce's bound (4 + 64/sqrt n) was exceeded by long serial dot products: on an H200
    (2026-11-22) the worst of 16.7M outputs of a 4096^3 product took 6.1 u sum|ab| with cuBLAS
    and torch, 6.7 u for a 999-long one of ours; 10 leaves room above those."""
    return (10 + 64 / math.sqrt(n)) * UNIT_ROUNDOFF
