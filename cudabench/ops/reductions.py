# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""What the reduce family shares (kernels/reduce/op.py, kernels/reduce_max/op.py): a row
reduction's declarations, its `elements` and `segments` grid rules, and the sum's reference
with its tolerance (also stream_read's).

A 1-D shape `(n,)` is one row, reduced to one value; `RxC` gives R results. Every variant
takes the same arguments:

    (const T* x, T* out, float* partials, unsigned* counters,
     long long rows, long long cols, int group, int chunks)

`group` and `chunks` come from the grid rule (see `segments`); `partials`/`counters` are the
scratch a multi-block row needs (counters start at zero and the kernel leaves them at zero).
"""

from __future__ import annotations

import math
from typing import Any

from cudabench.core.records import Shape
from cudabench.ops.api import Dims, Geometry, Launching, Op, Scalar, Tensor, uniform

# Rows of up to this many columns are short: warps take several at a time. Longer rows get
# blocks (see `segments`).
WARP_ROW_MAX_COLS = 1024
# Tunable parameters a header may declare (kernels/common/reduce.cuh reads the same names),
# with the values used when it does not:
# WARP_ROW_BYTES: short rows, rows a warp takes at once x the element size (16: 4 float32 rows
# or 8 16-bit rows; cb::kWarpRows).
WARP_ROW_BYTES = 16
# ITEMS: a block segment gives each thread at least this many elements: fewer blocks for
# small inputs, so that combining the block partials stays cheap. 64 here is for the variants
# that do not declare ITEMS (atomic, shared; a sweep of 4..256 of atomic's 2^20 sum on an H200
# found 64 best); float4 and shuffle (reduce and reduce_max) and x4 declare 32 first, the best
# of 16/32/64 over 1-D sums of 2^20..2^26 and 1000003 (docs/performance.md, fifth pass).
MIN_ELEMENTS_PER_THREAD = 64
# GRID_K: long rows, blocks per SM the split rows fill (grid = k x SMs, seed 001's "tail
# effect"); 0 (the default): as many as are resident at once (the occupancy).
GRID_K = 0
SHORT_ROW_PARAMS = ("WARP_ROW_BYTES",)
LONG_ROW_PARAMS = ("ITEMS", "GRID_K", "LOADS")
MAX_GRID = 2**31 - 1
# float32 unit roundoff u. The tolerance for a row of n elements is
#     (4 + 64 / sqrt(n)) * u * sum|x|.
# Summing random-sign data in any order keeps the error near u * sum|x| or below: tree orders
# (warp and block reductions) far below, serial orders (one atomicAdd per element) at about
# 0.5 u * sum|x| on average, since the partial sums stay near sqrt(k) * rms. Short rows have
# heavier tails: the worst of 442368 rows of 128 serial sums measured 4.4 u * sum|x| (H200,
# 2026-11-21), which the 64/sqrt(n) term covers (9.7 at n = 128). The bound still catches a
# single dropped element in rows up to ~10^6 elements, and any unwritten (NaN) output.
UNIT_ROUNDOFF = 2.0**-24


def rows_of(x: Any) -> Any:
    """x for a reduction along its last axis, a single row of a 2-D array as 1-D: CuPy reduces
    each row of a 2-D array with one block, a 1-D array with the whole GPU (on an H200, a
    float64 sum of 2^30 floats as 1 x 2^30: 785 ms; as 2^30: 1.9 ms)."""
    return x.reshape(-1) if x.ndim == 2 and x.shape[0] == 1 else x


def sum_tolerance(xp: Any, x: Any) -> Any:
    """The tolerance of each row sum of x (last axis), flat: (4 + 64/sqrt n) u sum|x|."""
    scale = (4 + 64 / math.sqrt(x.shape[-1])) * UNIT_ROUNDOFF
    return scale * xp.abs(rows_of(x)).sum(axis=-1, dtype=xp.float64).reshape(-1)


def segments(
    rows: int,
    cols: int,
    block: int,
    wave: int,
    itemsize: int = 4,
    warp_row_bytes: int = WARP_ROW_BYTES,
    items: int = MIN_ELEMENTS_PER_THREAD,
) -> Geometry:
    """Warp or block per row, whichever fits the row length (kernels/common/reduce.cuh).

    Short rows (cols <= WARP_ROW_MAX_COLS): group = 32, each warp takes
    warp_row_bytes / itemsize rows (4 float32, 8 16-bit by default), and
    the grid covers all rows (the kernels loop, so a smaller grid would be correct too, but a
    one-wave grid measured 3-5% slower on an H200: its warps wait on each row's reduction with
    no loads in flight). Long rows: group = block, and when there are too few rows to fill the
    GPU once (`wave` resident blocks), each row is split into `chunks` segments, one block
    each, up to a wave of blocks in all but no fewer than `items` elements a thread.
    """
    if cols <= WARP_ROW_MAX_COLS:
        warps = math.ceil(rows / max(1, warp_row_bytes // itemsize))
        return Geometry(math.ceil(warps / (block // 32)), block, (32, 1), _workspace(rows, 1))
    per_block = block * items
    chunks = max(1, min(math.ceil(wave / rows), math.ceil(cols / per_block)))
    return Geometry(rows * chunks, block, (block, chunks), _workspace(rows, chunks))


def _workspace(rows: int, chunks: int) -> dict[str, tuple[int, str]]:
    """Scratch for split rows: a partial per segment and a ticket counter per row (zeroed
    once; the kernels leave them at zero). One element each when no row is split."""
    if chunks == 1:
        return {"partials": (1, "float32"), "counters": (1, "uint32")}
    return {"partials": (rows * chunks, "float32"), "counters": (rows, "uint32")}


def _checked(geometry: Geometry) -> Geometry:
    if geometry.blocks > MAX_GRID:
        raise ValueError(f"grid of {geometry.blocks} blocks exceeds the CUDA limit {MAX_GRID}")
    return geometry


def elements_rule(at: Launching) -> Geometry:
    """`elements`: one thread per element, every row whole (group 32, one chunk)."""
    rows, cols = at.dims.rows, at.dims.cols
    return _checked(Geometry(math.ceil(rows * cols / at.block), at.block, (32, 1), _workspace(rows, 1)))


def segments_rule(at: Launching) -> Geometry:
    """`segments`: see `segments`; the wave is GRID_K (or the occupancy) blocks per SM."""
    k = at.value("GRID_K", GRID_K) or at.blocks_per_sm
    return _checked(
        segments(
            at.dims.rows,
            at.dims.cols,
            at.block,
            at.device.sm_count * k,
            at.itemsize,
            at.value("WARP_ROW_BYTES", WARP_ROW_BYTES),
            at.value("ITEMS", MIN_ELEMENTS_PER_THREAD),
        )
    )


class RowReduction(Op):
    """A reduction along the last axis: x (rows x cols, or one row of n) to out (rows)."""

    dims = ("rows", "cols")
    example = "442368x128 or 2^30"
    # the shape as given: a 1-D input stays 1-D, so the baselines see what a user has
    inputs = (Tensor("x", "rows cols", fill=uniform(-1.0, 1.0)),)
    outputs = (Tensor("out", "rows"),)
    workspace = ("partials", "counters")
    scalars = (Scalar("rows"), Scalar("cols"))
    rule_scalars = (Scalar("group", "int"), Scalar("chunks", "int"))
    rules = {"elements": elements_rule, "segments": segments_rule}
    requirements = ("cols_multiple_of", "min_cols", "max_cols")
    float64_inputs = False  # the sums run in float64 without a float64 copy of x

    def unused_params(self, shape: Shape) -> tuple[str, ...]:
        """Parameters the segments rule ignores for this shape (a search keeps them at
        their default instead of timing the same kernel again)."""
        cols = self.dim_values(shape)["cols"]
        return LONG_ROW_PARAMS if cols <= WARP_ROW_MAX_COLS else SHORT_ROW_PARAMS

    def flop_count(self, dims: Dims) -> int:
        """One add (reduce_max: one max) an element: the roofline's FLOP count."""
        return dims.rows * dims.cols

    def device_bytes(self, shape: Shape) -> int:
        d = self.dim_values(shape)
        # input, |x| for the tolerance, outputs and float64 reference/tolerance/check arrays
        return 2 * 4 * d["rows"] * d["cols"] + 64 * d["rows"] + (64 << 20)
