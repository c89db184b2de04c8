# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`reduce_scale` (seed 000): per row, x /= max(|x|), in place.

Kernel arguments: `(T* x, long long rows, long long cols)`; the kernel overwrites x. The
runner hands it a copy of the input as `out` and restores it before every validation and
every timed sample (outside the timing). Grid rules: `row_block` (a block per row),
`warp_rows` (a warp per row) and `warp_rows4` (a warp per 4 consecutive rows). Bytes that must
move: the matrix read once and written once.
"""

from __future__ import annotations

import math
from typing import Any

from cudabench.op import (
    Dims,
    Op,
    Scalar,
    Shape,
    Tensor,
    block_rows,
    torch_call,
    uniform,
    warp_rows,
    xp_of,
)

UNIT_ROUNDOFF = 2.0**-24


def _cupy_expression(x: Any) -> Any:
    rows = x.reshape(-1, x.shape[-1])
    return rows / xp_of(x).abs(rows).max(axis=1, keepdims=True)


def _torch_expression(x: Any) -> Any:
    rows = x.reshape(-1, x.shape[-1])
    return rows / rows.abs().amax(dim=1, keepdim=True)


class ReduceScale(Op):
    name = "reduce_scale"
    about = "per row x /= max|x|, in place (seed 000)"
    dims = ("rows", "cols")
    example = "442368x128"
    inputs = (Tensor("x", "rows cols", fill=uniform(-1.0, 1.0)),)
    outputs = (Tensor("x", "rows cols"),)  # the input's name: in place
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {
        "row_block": block_rows(),
        "warp_rows": warp_rows(),
        "warp_rows4": warp_rows(per_warp=4),
    }
    requirements = ("max_cols", "min_cols", "cols_multiple_of")
    library = {"cupy": _cupy_expression, "torch": torch_call(_torch_expression)}

    def reference(self, xp: Any, x: Any) -> Any:
        x64 = x.reshape(-1, x.shape[-1])
        return x64 / xp.abs(x64).max(axis=1, keepdims=True)

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        # x / m rounded once, or x * (1 / m) rounded twice: 2 u relative, and a little slack
        return 4 * UNIT_ROUNDOFF * xp.abs(ref)

    def flop_count(self, dims: Dims) -> int:
        return 2 * dims.rows * dims.cols  # |x| and max, then the scaling

    def device_bytes(self, shape: Shape) -> int:
        # input and output, float64 reference and tolerance, the check's temporaries
        return 40 * math.prod(shape) + (64 << 20)
