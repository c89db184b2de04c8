"""`reduce`: sum along the last axis, float32 in and out.

A 1-D shape `(n,)` is one row, reduced to one value; `RxC` gives R sums. Every variant takes
the same arguments:

    (const float* x, float* out, float* partials, unsigned* counters,
     long long rows, long long cols, int group, int chunks)

`group` and `chunks` come from the grid rule (see `segments`); `partials`/`counters` are the
scratch a multi-block row needs (counters start at zero and the kernel leaves them at zero).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

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


def _rows_cols(shape: Shape) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


class Reduce:
    name = "reduce"
    about = "sum along the last axis, float32 accumulation (1-D: one value; RxC: R row sums)"
    grid_rules = ("elements", "segments")
    requirements = ("cols_multiple_of", "min_cols", "max_cols")

    def check_shape(self, shape: Shape) -> None:
        if len(shape) not in (1, 2):
            raise ValueError(
                f"reduce takes a 1-D (n) or 2-D (rows x cols) shape, got {len(shape)}-D"
            )

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        _, cols = _rows_cols(shape)
        for name, value in variant.requires:
            if name == "cols_multiple_of" and cols % value:
                return f"needs cols % {value} == 0 (cols = {cols})"
            if name == "min_cols" and cols < value:
                return f"needs cols >= {value} (cols = {cols})"
            if name == "max_cols" and cols > value:
                return f"needs cols <= {value} (cols = {cols})"
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return (_rows_cols(shape)[0],)

    def unused_params(self, shape: Shape) -> tuple[str, ...]:
        """Parameters the segments rule ignores for this shape (a search keeps them at
        their default instead of timing the same kernel again)."""
        return LONG_ROW_PARAMS if _rows_cols(shape)[1] <= WARP_ROW_MAX_COLS else SHORT_ROW_PARAMS

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        rows, cols = _rows_cols(shape)
        return itemsize * (rows * cols + rows)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        rows, cols = _rows_cols(shape)
        return itemsize * rows * cols

    def arithmetic(self, shape: Shape) -> int:
        """One add (reduce_max: one max) an element: the roofline's FLOP count."""
        rows, cols = _rows_cols(shape)
        return rows * cols

    def device_bytes(self, shape: Shape) -> int:
        rows, cols = _rows_cols(shape)
        # input, |x| for the tolerance, outputs and float64 reference/tolerance/check arrays
        return 2 * 4 * rows * cols + 64 * rows + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        # the shape as given: a 1-D input stays 1-D, so the baselines see what a user has
        x = xp.random.default_rng(seed).random(shape, dtype=xp.float32)
        x *= 2
        x -= 1  # uniform in [-1, 1): negative values, never all zeros
        return (x,)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        (x,) = inputs
        n = x.shape[-1]
        ref = x.sum(axis=-1, dtype=xp.float64).reshape(-1)
        scale = (4 + 64 / math.sqrt(n)) * UNIT_ROUNDOFF
        tol = scale * xp.abs(x).sum(axis=-1, dtype=xp.float64).reshape(-1)
        return ref, xp.maximum(tol, 1e-30)

    def geometry(
        self, launch: Launch, variant: KernelVariant, shape: Shape, device: DeviceInfo,
        blocks_per_sm: int, itemsize: int = 4,
    ) -> Geometry:
        rows, cols = _rows_cols(shape)
        block = launch.block
        if launch.grid == "elements":  # one thread per element
            geometry = Geometry(
                math.ceil(rows * cols / block), block, (32, 1), _workspace(rows, 1)
            )
        elif launch.grid == "segments":
            k = variant.value("GRID_K", GRID_K) or blocks_per_sm
            geometry = segments(rows, cols, block, device.sm_count * k, itemsize,
                                variant.value("WARP_ROW_BYTES", WARP_ROW_BYTES),
                                variant.value("ITEMS", MIN_ELEMENTS_PER_THREAD))  # fmt: skip
        else:
            raise ValueError(
                f"{variant.path}:{variant.header_line}: unknown grid rule {launch.grid!r} "
                f"(reduce knows: {', '.join(self.grid_rules)})"
            )
        if geometry.grid > MAX_GRID:
            raise ValueError(f"grid of {geometry.grid} blocks exceeds the CUDA limit {MAX_GRID}")
        return geometry

    def kernel_args(
        self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any], geometry: Geometry
    ) -> tuple[Any, ...]:
        (x,) = inputs
        rows, cols = _rows_cols(x.shape)
        group, chunks = geometry.scalars
        return (
            x, out, workspace["partials"], workspace["counters"],
            np.int64(rows), np.int64(cols), np.int32(group), np.int32(chunks),
        )  # fmt: skip

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found = {"cupy": lambda inputs: inputs[0].sum(axis=-1)}
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(lambda x: x.sum(-1))
        return found


def segments(rows: int, cols: int, block: int, wave: int, itemsize: int = 4,
             warp_row_bytes: int = WARP_ROW_BYTES,
             items: int = MIN_ELEMENTS_PER_THREAD) -> Geometry:  # fmt: skip
    """Warp or block per row, whichever fits the row length (kernels/common/reduce.cuh).

    Short rows (cols <= WARP_ROW_MAX_COLS): group = 32, each warp takes
    warp_row_bytes / itemsize rows (4 float32, 8 16-bit by default), and
    the grid covers all rows (the kernels loop, so a smaller grid would be correct too, but a
    one-wave grid measured 3-5% slower on an H200: its warps wait on each row's reduction with
    no loads in flight). Long rows: group = block, and when there are too few rows to fill the GPU once (`wave`
    resident blocks), each row is split into `chunks` segments, one block each, up to a wave
    of blocks in all but no fewer than `items` elements a thread.
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


OP = Reduce()
