"""`reduce_scale` (seed 000): per row, x /= max(|x|), in place, float32.

Kernel arguments: `(float* x, long long rows, long long cols)`; the kernel overwrites x. The
runner hands it a copy of the input as `out` and restores it before every validation and
every timed sample (outside the timing). Grid rules: `row_block` (a block per row),
`warp_rows` (a warp per row) and `warp_rows4` (a warp per 4 consecutive rows). Bytes that must
move: the matrix read once and written once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry, array_module
from cudabench.ops.matrix import UNIT_ROUNDOFF, RowOp, check_grid, rows_cols, uniform, unknown_rule
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape


class ReduceScale(RowOp):
    FLOPS_AN_ELEMENT = 2  # |x| and max, then the scaling
    name = "reduce_scale"
    about = "per row x /= max|x|, in place (seed 000)"
    grid_rules = ("row_block", "warp_rows", "warp_rows4")
    requirements = ("max_cols", "min_cols", "cols_multiple_of")
    in_place = True

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        return (uniform(xp, shape, seed),)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        (x,) = inputs
        rows, cols = rows_cols(x.shape)
        x64 = x.reshape(rows, cols).astype(xp.float64)
        ref = (x64 / xp.abs(x64).max(axis=1, keepdims=True)).reshape(-1)
        # x / m rounded once, or x * (1 / m) rounded twice: 2 u relative, and a little slack
        return ref, xp.maximum(4 * UNIT_ROUNDOFF * xp.abs(ref), 1e-30)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        rows, _ = rows_cols(shape)
        if launch.grid == "row_block":
            grid = rows
        elif launch.grid in ("warp_rows", "warp_rows4"):  # a warp per row, or per 4 rows
            per_warp = 4 if launch.grid == "warp_rows4" else 1
            grid = math.ceil(rows / per_warp / (launch.block // 32))
        else:
            raise unknown_rule(self, variant, launch.grid)
        check_grid(grid)
        return Geometry(grid, launch.block)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        rows, cols = rows_cols(out.shape)
        return (out, np.int64(rows), np.int64(cols))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        def cupy_expression(inputs: tuple[Any, ...]) -> Any:
            x = inputs[0].reshape(rows_cols(inputs[0].shape))
            return x / array_module(x).abs(x).max(axis=1, keepdims=True)

        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {"cupy": cupy_expression}
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(
                lambda x: (lambda m: m / m.abs().amax(dim=1, keepdim=True))(x.reshape(-1, x.shape[-1]))
            )
        return found


OP = ReduceScale()
