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

# The float64 reference is taken this many elements of A at a time: cuBLAS's float64 gemv
# failed (CUBLAS_STATUS_INTERNAL_ERROR) at 2,147,422,207 x 1 on an H200 (`cudabench verify
# gemv`, 2026-11-27), and A's float64 copy is then one piece, not 8 bytes an element of A.
REFERENCE_ELEMENTS = 1 << 28


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
        m, k = a.shape
        x64 = x.astype(xp.float64)
        abs_x64 = xp.abs(x64)
        ref, bound = xp.empty(m, dtype=xp.float64), xp.empty(m, dtype=xp.float64)
        rows = max(1, REFERENCE_ELEMENTS // max(k, 1))
        for start in range(0, m, rows):
            piece = a[start : start + rows].astype(xp.float64)
            ref[start : start + rows] = piece @ x64
            xp.abs(piece, out=piece)  # the float64 copy, reused for the tolerance
            bound[start : start + rows] = piece @ abs_x64
        return ref, xp.maximum(dot_tolerance(k) * bound, 1e-30)

    def flop_count(self, dims: Dims) -> int:
        return 2 * dims.M * dims.K

    def device_bytes(self, shape: Shape) -> int:
        """A, x and y; a piece of A in float64 and its products; the reference and tolerance
        (and the tolerance's temporary); slack."""
        m, k = shape
        piece = min(m * k, max(k, REFERENCE_ELEMENTS))
        return 4 * (m * k + k + m) + 8 * (piece + 2 * k) + 8 * 4 * m + (64 << 20)
