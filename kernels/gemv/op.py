# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`gemv`: y = A x for an M x K matrix A (seed 002 sgemv), any M and K.

Kernel arguments: `(const float* A, const float* x, float* y, long long M, long long K)`.
Grid rule `warp_rows`: a warp per row, the grid covers all rows. The bytes that must move are
A once, x once and y once; the tolerance is reduce's bound on sum |A_ij x_j| per row.
"""

from __future__ import annotations

from typing import Any

from cudabench.op import Dims, Op, Scalar, Shape, Tensor, torch_call, warp_rows
from cudabench.ops.matrix import dot_tolerance, uniform


class Gemv(Op):
    name = "gemv"
    about = "y = A x, A is M x K, float32 accumulation (seed 002 sgemv)"
    dims = ("M", "K")
    ranks = (2,)
    example = "16384x16384"
    inputs = (Tensor("A", "M K"), Tensor("x", "K"))
    outputs = (Tensor("y", "M"),)
    scalars = (Scalar("M"), Scalar("K"))
    rules = {"warp_rows": warp_rows("M")}
    requirements: tuple[str, ...] = ()
    library = {"cupy": lambda a, x: a @ x, "torch": torch_call(lambda a, x: a @ x)}

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        m, k = shape
        return uniform(xp, (m, k), seed), uniform(xp, (k,), seed + 1)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        a, x = inputs
        a64, x64 = a.astype(xp.float64), x.astype(xp.float64)
        ref = a64 @ x64
        xp.abs(a64, out=a64)  # one float64 copy of A, reused for the tolerance
        tol = dot_tolerance(a.shape[1]) * (a64 @ xp.abs(x64))
        return ref, xp.maximum(tol, 1e-30)

    def flop_count(self, dims: Dims) -> int:
        return 2 * dims.M * dims.K

    def device_bytes(self, shape: Shape) -> int:
        m, k = shape
        return 4 * m * k + 16 * m * k + (64 << 20)  # A, its float64 copies for the reference
