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

from cudabench.ops.base import Geometry
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

# Rows up to this many columns get a warp each; longer rows get blocks (see `segments`).
WARP_ROW_MAX_COLS = 1024
MAX_GRID = 2**31 - 1
# float32 unit roundoff. Summing random-sign data in any order (serial, tree, atomics) keeps
# the error near u * sum|x| or below: partial sums stay near sqrt(k) * rms, so each rounding
# costs at most u * sqrt(k) * rms, and the roundings add up like a random walk. Four times
# that is the tolerance: wide enough for a serial atomic sum of 2^30 elements, narrow enough
# that dropping a single element of a row is caught.
UNIT_ROUNDOFF = 2.0**-24
TOLERANCE_FACTOR = 4.0


def _rows_cols(shape: Shape) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


class Reduce:
    name = "reduce"
    about = "sum along the last axis, float32 (1-D: one value; RxC: R row sums)"
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

    def bytes_moved(self, shape: Shape) -> int:
        rows, cols = _rows_cols(shape)
        return 4 * rows * cols + 4 * rows

    def device_bytes(self, shape: Shape) -> int:
        rows, cols = _rows_cols(shape)
        # input, |x| for the tolerance, outputs and float64 reference/tolerance/check arrays
        return 2 * 4 * rows * cols + 64 * rows + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        rows, cols = _rows_cols(shape)
        x = xp.random.default_rng(seed).random((rows, cols), dtype=xp.float32)
        x *= 2
        x -= 1  # uniform in [-1, 1): negative values, never all zeros
        return (x,)

    def reference(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        (x,) = inputs
        ref = x.sum(axis=-1, dtype=xp.float64)
        tol = TOLERANCE_FACTOR * UNIT_ROUNDOFF * xp.abs(x).sum(axis=-1, dtype=xp.float64)
        return ref, xp.maximum(tol, 1e-30)

    def geometry(
        self, launch: Launch, variant: KernelVariant, shape: Shape, device: DeviceInfo
    ) -> Geometry:
        rows, cols = _rows_cols(shape)
        block = launch.block
        if launch.grid == "elements":  # one thread per element
            geometry = Geometry(
                math.ceil(rows * cols / block), block, (32, 1), _workspace(rows, 1)
            )
        elif launch.grid == "segments":
            geometry = segments(rows, cols, block, variant.vector, device)
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
        rows, cols = x.shape
        group, chunks = geometry.scalars
        return (
            x, out, workspace["partials"], workspace["counters"],
            np.int64(rows), np.int64(cols), np.int32(group), np.int32(chunks),
        )  # fmt: skip

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        return {"cupy": lambda inputs: inputs[0].sum(axis=-1)}


def segments(rows: int, cols: int, block: int, vector: int, device: DeviceInfo) -> Geometry:
    """Thread, warp or block per row, whichever fits the row length.

    Rows of up to WARP_ROW_MAX_COLS columns get one warp each (group = 32, chunks = 1). Longer
    rows get whole blocks (group = block), and when there are too few rows to fill the GPU
    once, each row is split into `chunks` block-sized segments, up to one full wave of blocks
    in all and no more segments than the row has vector loads for.
    """
    if cols <= WARP_ROW_MAX_COLS:
        group, chunks = 32, 1
    else:
        group = block
        wave = device.sm_count * max(1, device.max_threads_per_sm // block)
        chunks = max(1, min(math.ceil(wave / rows), math.ceil(cols / (block * vector))))
    groups_per_block = block // group
    grid = math.ceil(rows * chunks / groups_per_block)
    return Geometry(grid, block, (group, chunks), _workspace(rows, chunks))


def _workspace(rows: int, chunks: int) -> dict[str, tuple[int, str]]:
    """Scratch for split rows: a partial per segment and a ticket counter per row (zeroed
    once; the kernels leave them at zero). One element each when no row is split."""
    if chunks == 1:
        return {"partials": (1, "float32"), "counters": (1, "uint32")}
    return {"partials": (rows * chunks, "float32"), "counters": (rows, "uint32")}


OP = Reduce()
