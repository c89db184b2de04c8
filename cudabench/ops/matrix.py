# ruff: noqa: RUF012 - an op declares its tensors as class attributes
"""What the matrix ops share (kernels/gemv, kernels/sgemm, the telemetry check's hgemm):
random inputs from their own seeds, the reference tolerance of a float32 dot product, and
`Product`, the declaration of C = A B (shape MxNxK) that sgemm and hgemm subclass."""

from __future__ import annotations

import math
from typing import Any

from cudabench.core.records import Shape
from cudabench.ops.api import Dims, Op, Scalar, Tensor
from cudabench.ops.protocol import ZERO_TOLERANCE

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


class Product(Op):
    """C = A B, A M x K and B K x N, row-major; shape MxNxK. Inputs uniform in [-1, 1); the
    reference is the float64 product, the tolerance a float32 sum's error of K products
    (`dot_tolerance` times sum |a_ik b_kj|). Kernel arguments `(A, B, C, M, N, K)`."""

    dims = ("M", "N", "K")
    ranks = (3,)
    inputs = (Tensor("A", "M K"), Tensor("B", "K N"))
    outputs = (Tensor("C", "M N"),)
    scalars = (Scalar("M", "int"), Scalar("N", "int"), Scalar("K", "int"))
    compute_bound = True

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        m, n, k = shape
        return uniform(xp, (m, k), seed), uniform(xp, (k, n), seed + 1)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        a, b = inputs
        a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
        ref = (a64 @ b64).reshape(-1)
        xp.abs(a64, out=a64)  # the float64 copies, reused for the tolerance
        xp.abs(b64, out=b64)
        tol = dot_tolerance(a.shape[1]) * (a64 @ b64).reshape(-1)
        return ref, xp.maximum(tol, ZERO_TOLERANCE)

    def flop_count(self, dims: Dims) -> int:
        return 2 * dims.M * dims.N * dims.K

    def device_bytes(self, shape: Shape) -> int:
        """Inputs and output, the float64 copies, reference and tolerance, and slack."""
        m, n, k = shape
        return 4 * (m * k + k * n + m * n) + 2 * 8 * (m * k + k * n) + 4 * 8 * m * n + (64 << 20)
