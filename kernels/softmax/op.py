# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`softmax` along the last axis: a 1-D array (one long row) or rows (seeds 001, 002, 003).

Kernel arguments: `(const T* x, T* out, float* partials, long long rows, long long cols,
int chunks)`. Grid rules:
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
skips the max subtraction overflows exp and fails. triton_rows.py beside it is a Python
variant (Triton).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from cudabench.op import (
    Dims,
    Geometry,
    GridRule,
    KernelVariant,
    Launching,
    Op,
    Scalar,
    Shape,
    Tensor,
    block_rows,
    check_grid,
    torch_call,
    uniform,
    warp_rows,
    xp_of,
)
from cudabench.ops.protocol import tiles_grid

UNIT_ROUNDOFF = 2.0**-24
SHIFT = 100.0
SHIFT_EVERY = 5
SPLIT_PER_THREAD = 16  # the `split` rule gives each thread at least this many elements
SHARED_LIMIT = 48 * 1024  # dynamic shared memory without opting in
ONE_CHUNK = {"partials": (2, "float32")}


def _whole_rows(rule: GridRule, shared: Any = None) -> GridRule:
    """A rule that gives each row to one warp, block or cluster: chunks = 1, the two partials
    a kernel may touch, and `shared(at)` bytes of dynamic shared memory."""

    def whole(at: Launching) -> Geometry:
        geometry = rule(at)
        return dataclasses.replace(geometry, scalars=(1,), workspace=dict(ONE_CHUNK),
                                   shared_bytes=shared(at) if shared else 0)

    return whole


def _cluster(at: Launching) -> Geometry:  # the kernel's __cluster_dims__(CLUSTER, 1, 1)
    grid = at.dims.rows * at.value("CLUSTER", 1)
    check_grid(grid)
    return Geometry(grid, at.block)


def _hybrid_shared(at: Launching) -> int:
    # the kernel's own dispatch: a thread's 16-byte packs, rounded up to a power of two
    per_thread = -(-(at.dims.cols * at.itemsize // 16) // at.block)
    packs = 1 << max(0, per_thread - 1).bit_length()
    return max(0, packs - at.value("REG_PACKS", 8)) * at.block * 16


def _split(tiles: bool) -> GridRule:
    def rule(at: Launching) -> Geometry:
        rows, cols = at.dims.rows, at.dims.cols
        name = "tiles" if tiles else "split"
        if rows != 1:
            raise ValueError(f"the {name} rule is for 1-D softmax (one row)")
        # one count for all the variant's kernels (they share the partials): the least
        # occupancy (the runner's) and the first launch's block
        wave = at.device.sm_count * max(1, at.blocks_per_sm)
        first = at.variant.launches[0].block
        chunks = max(1, min(wave, math.ceil(cols / (first * SPLIT_PER_THREAD))))
        grid = tiles_grid(cols, at.block, at.variant, at.itemsize) if tiles else chunks
        check_grid(grid)
        # the pairs, then (max, 1/sum) and a ticket for a variant whose last block combines them
        workspace = {"partials": (2 * chunks + (4 if tiles else 0), "float32")}
        return Geometry(grid, at.block, (chunks,), workspace)

    return rule


def _cupyx_softmax(x: Any) -> Any:
    if xp_of(x) is np:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    from cupyx.scipy.special import softmax

    return softmax(x, axis=-1)


class Softmax(Op):
    name = "softmax"
    about = "softmax along the last axis, in float (1-D: one row; RxC: each row)"
    dims = ("rows", "cols")
    example = "442368x128 or 2^28"
    inputs = (Tensor("x", "rows cols", fill=uniform(-4.0, 4.0)),)
    outputs = (Tensor("out", "rows cols"),)
    workspace = ("partials",)
    scalars = (Scalar("rows"), Scalar("cols"))
    rule_scalars = (Scalar("chunks", "int"),)
    rules = {
        "warp_rows": _whole_rows(warp_rows()),
        "warp_rows4": _whole_rows(warp_rows(per_warp=4)),
        "row_block": _whole_rows(block_rows()),
        "row_block_smem": _whole_rows(block_rows(), lambda at: 4 * at.dims.cols),
        "row_block_hybrid": _whole_rows(block_rows(), _hybrid_shared),
        "row_cluster": _whole_rows(_cluster),
        "split": _split(tiles=False),
        "tiles": _split(tiles=True),
    }
    requirements = ("max_cols", "min_cols", "cols_multiple_of", "max_rows")
    library = {
        "cupyx": _cupyx_softmax,
        "torch": torch_call(lambda x: x.softmax(dim=-1)),
    }

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        reason = super().unmet(variant, shape)
        if reason is not None:
            return reason + (": a 1-D variant" if reason.startswith("needs rows <=") else "")
        cols = self.dim_values(shape)["cols"]
        smem = any(launch.grid == "row_block_smem" for launch in variant.launches)
        if smem and 4 * cols > SHARED_LIMIT:
            return f"a row of {cols} floats needs {4 * cols} B of shared memory (48 KiB max)"
        return None

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        (x,) = super().make_inputs(xp, shape, seed)
        d = self.dim_values(shape)
        view = x.reshape(d["rows"], d["cols"])
        view[::SHIFT_EVERY] += SHIFT
        return (x,)

    def reference(self, xp: Any, x: Any) -> Any:
        x64 = x.reshape(-1, x.shape[-1])  # a float64 copy: worked on in place
        x64 -= x64.max(axis=1, keepdims=True)
        xp.exp(x64, out=x64)
        x64 /= x64.sum(axis=1, keepdims=True)
        return x64

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        # exp (a few ulp, __expf on [-8, 0] about 11) and the row sum's rounding, which for a
        # sum of n positive terms grows with n: torch's own 1-D softmax of 2^28 was 2.5e-5
        # (420 u) off in relative terms on an H200. 0.25 sqrt(n) u is 10x that at 2^28, and
        # still catches a sum missing one block's share (1/1000).
        ulps = 64 + 0.25 * math.sqrt(x.shape[-1])
        return ulps * UNIT_ROUNDOFF * ref

    def flop_count(self, dims: Dims) -> int:
        return 5 * dims.rows * dims.cols  # max, subtract, exp, sum, scale

    def device_bytes(self, shape: Shape) -> int:
        # input and output, float64 reference and tolerance, the check's temporaries
        return 40 * math.prod(shape) + (64 << 20)
