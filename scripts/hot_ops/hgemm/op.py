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

from cudabench.ops.matrix import Product


class Hgemm(Product):
    """sgemm's declaration (cudabench.ops.matrix.Product): inputs, float64 reference and
    tolerance (the runner adds the rounding of C to 16 bits), flops."""

    about = "C = A B in float16/bfloat16 on the tensor cores (torch); the telemetry check's hot run"
    example = "8192x8192x8192 (M x N x K)"
