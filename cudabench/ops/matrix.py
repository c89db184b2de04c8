"""What the matrix ops share (kernels/gemv, kernels/sgemm, the telemetry check's hgemm):
random inputs from their own seeds, the reference tolerance of a float32 dot product, and a
matrix product's float64 reference with its tolerance."""

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


def product_expected(xp: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """(float64 reference, per-element tolerance) of C = A B, both flat: a float32 sum's error
    of K products (`dot_tolerance` times sum |a_ik b_kj|). The float64 copies are reused for
    the tolerance (|A| |B| in place), so the check holds two copies of the inputs, not four."""
    a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
    ref = (a64 @ b64).reshape(-1)
    xp.abs(a64, out=a64)
    xp.abs(b64, out=b64)
    tol = dot_tolerance(a.shape[1]) * (a64 @ b64).reshape(-1)
    return ref, xp.maximum(tol, 1e-30)
