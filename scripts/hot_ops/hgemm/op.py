# ruff: noqa: RUF012 - an op declares its tensors as class attributes
"""hgemm: C = A B in 16 bits on the tensor cores (torch's matmul, cuBLAS); shape MxNxK.

Not part of the catalogue: the long hot run that plants a power slowdown for the telemetry
check (scripts/telemetry_check.sh, docs/guide/telemetry.md). At 8192^3 in bfloat16 an H100
draws its whole power limit, so the driver holds its clock back ("sw power cap") and the
watch marks the samples taken meanwhile. Its `% peak` is of the fp32 (CUDA-core) peak, as
for every compute-bound op, so the tensor cores read about 1,000% there. Run it as a user op:

    cudabench run hgemm --ops scripts/hot_ops -s 8192x8192x8192 -d bfloat16 --max-time 10
"""

from __future__ import annotations

from typing import Any

from cudabench.op import Dims, Op, Scalar, Tensor
from cudabench.ops.matrix import product_expected, uniform
from cudabench.spec import Shape


class Hgemm(Op):
    about = "C = A B in float16/bfloat16 on the tensor cores (torch); the telemetry check's hot run"
    dims = ("M", "N", "K")
    ranks = (3,)
    example = "8192x8192x8192 (M x N x K)"
    inputs = (Tensor("A", "M K"), Tensor("B", "K N"))
    outputs = (Tensor("C", "M N"),)
    scalars = (Scalar("M", "int"), Scalar("N", "int"), Scalar("K", "int"))
    compute_bound = True

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        m, n, k = shape
        return uniform(xp, (m, k), seed), uniform(xp, (k, n), seed + 1)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        """sgemm's reference and tolerance; the runner adds the rounding of C to 16 bits."""
        return product_expected(xp, *inputs)

    def flop_count(self, dims: Dims) -> int:
        return 2 * dims.M * dims.N * dims.K
