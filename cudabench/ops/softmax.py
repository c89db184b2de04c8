"""`softmax` along the last axis, float32: a 1-D array (one long row) or rows (seeds 001,
002, 003).

Kernel arguments: `(const float* x, float* out, float* partials, long long rows,
long long cols, int chunks)`. Grid rules:
- `warp_rows` (a warp per row), `warp_rows4` (a warp per 4 consecutive rows);
- `row_block` (a block per row), `row_block_smem` (a block per row with the row in dynamic
  shared memory, cols * 4 bytes), `row_block_hybrid` (a block per row, each thread's packs
  past REG_PACKS in dynamic shared memory: (P - REG_PACKS) x block x 16 bytes, P the power of
  two >= the row's 16-byte packs over the block), `row_cluster` (CLUSTER blocks per row, the
  variant's parameter: a thread-block cluster, sm_90);
- `split`, for the 1-D multi-kernel variants: `chunks` blocks share the one row, `partials`
  holds two floats per block (max and sum), and every kernel of the variant uses the same
  count; `tiles`, for a 1-D variant's kernel that reads what a `split` kernel left (`chunks`
  pairs, then the row's (max, 1/sum) and a ticket): a block per block x UNROLL 16-byte packs
  (kernels/common/stream.cuh).
Inputs: uniform [-4, 4), every fifth row (and the 1-D row) shifted by +100, so a kernel that
skips the max subtraction overflows exp and fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry, array_module, tiles_grid
from cudabench.ops.matrix import UNIT_ROUNDOFF, RowOp, check_grid, rows_cols, uniform, unknown_rule
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

SHIFT = 100.0
SHIFT_EVERY = 5
SPLIT_PER_THREAD = 16  # the `split` rule gives each thread at least this many elements
SHARED_LIMIT = 48 * 1024  # dynamic shared memory without opting in


class Softmax(RowOp):
    FLOPS_AN_ELEMENT = 5  # max, subtract, exp, sum, scale
    name = "softmax"
    about = "softmax along the last axis, in float (1-D: one row; RxC: each row)"
    grid_rules = ("warp_rows", "warp_rows4", "row_block", "row_block_smem", "row_block_hybrid",
                  "row_cluster", "split", "tiles")
    requirements = ("max_cols", "min_cols", "cols_multiple_of", "max_rows")

    example = "442368x128 or 2^28"

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        reason = super().unmet(variant, shape)
        cols = rows_cols(shape)[1]
        if reason is None and any(l.grid == "row_block_smem" for l in variant.launches):
            if 4 * cols > SHARED_LIMIT:
                return f"a row of {cols} floats needs {4 * cols} B of shared memory (48 KiB max)"
        return reason

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        x = uniform(xp, shape, seed, -4.0, 4.0)
        view = x.reshape(rows_cols(shape))
        view[::SHIFT_EVERY] += SHIFT
        return (x,)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        (x,) = inputs
        rows, cols = rows_cols(x.shape)
        x64 = x.reshape(rows, cols).astype(xp.float64)
        x64 -= x64.max(axis=1, keepdims=True)
        xp.exp(x64, out=x64)
        x64 /= x64.sum(axis=1, keepdims=True)
        ref = x64.reshape(-1)
        # exp (a few ulp, __expf on [-8, 0] about 11) and the row sum's rounding, which for a
        # sum of n positive terms grows with n: torch's own 1-D softmax of 2^28 was 2.5e-5
        # (420 u) off in relative terms on an H200. 0.25 sqrt(n) u is 10x that at 2^28, and
        # still catches a sum missing one block's share (1/1000).
        ulps = 64 + 0.25 * math.sqrt(cols)
        return ref, xp.maximum(ulps * UNIT_ROUNDOFF * ref, 1e-30)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        rows, cols = rows_cols(shape)
        shared = 0
        chunks = 1
        workspace = {"partials": (2, "float32")}
        if launch.grid in ("warp_rows", "warp_rows4"):  # a warp per row, or per 4 rows
            per_warp = 4 if launch.grid == "warp_rows4" else 1
            grid = math.ceil(rows / per_warp / (launch.block // 32))
        elif launch.grid == "row_block":
            grid = rows
        elif launch.grid == "row_cluster":  # the kernel's __cluster_dims__(CLUSTER, 1, 1)
            grid = rows * variant.value("CLUSTER", 1)
        elif launch.grid == "row_block_smem":
            grid, shared = rows, 4 * cols
        elif launch.grid == "row_block_hybrid":
            # the kernel's own dispatch: a thread's 16-byte packs, rounded up to a power of two
            per_thread = -(-(cols * itemsize // 16) // launch.block)
            packs = 1 << max(0, per_thread - 1).bit_length()
            grid = rows
            shared = max(0, packs - variant.value("REG_PACKS", 8)) * launch.block * 16
        elif launch.grid in ("split", "tiles"):
            if rows != 1:
                raise ValueError(f"the {launch.grid} rule is for 1-D softmax (one row)")
            # one count for all the variant's kernels (they share the partials): the least
            # occupancy (the runner's) and the first launch's block
            wave = device.sm_count * max(1, blocks_per_sm)
            first = variant.launches[0].block
            chunks = max(1, min(wave, math.ceil(cols / (first * SPLIT_PER_THREAD))))
            grid = chunks if launch.grid == "split" else tiles_grid(cols, launch.block, variant,
                                                                      itemsize)  # fmt: skip
            # the pairs, then (max, 1/sum) and a ticket for a variant whose last block combines them
            workspace = {"partials": (2 * chunks + (4 if launch.grid == "tiles" else 0), "float32")}
        else:
            raise unknown_rule(self, variant, launch.grid)
        check_grid(grid)
        return Geometry(grid, launch.block, (chunks,), workspace, shared)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        (x,) = inputs
        rows, cols = rows_cols(x.shape)
        (chunks,) = geometry.scalars
        return (x, out, workspace["partials"], np.int64(rows), np.int64(cols), np.int32(chunks))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        def cupyx_softmax(inputs: tuple[Any, ...]) -> Any:
            x = inputs[0]
            if array_module(x) is np:
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            from cupyx.scipy.special import softmax

            return softmax(x, axis=-1)

        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {"cupyx": cupyx_softmax}
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(lambda x: x.softmax(dim=-1))
        return found


OP = Softmax()
