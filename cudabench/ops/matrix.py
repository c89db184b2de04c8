"""What the row- and matrix-shaped ops share: shape checks, grid-rule errors, random inputs,
and the reference tolerance of a float32 dot product or sum."""

from __future__ import annotations

import math
from typing import Any

from cudabench.spec import KernelVariant, Shape

UNIT_ROUNDOFF = 2.0**-24
MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535


def rows_cols(shape: Shape) -> tuple[int, int]:
    """A 1-D shape is one row."""
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


def need_dims(name: str, shape: Shape, allowed: tuple[int, ...], example: str) -> None:
    if len(shape) not in allowed:
        dims = " or ".join(f"{d}-D" for d in allowed)
        raise ValueError(f"{name} takes a {dims} shape (e.g. {example}), got {len(shape)}-D")


def unknown_rule(op: Any, variant: KernelVariant, rule: str) -> ValueError:
    return ValueError(
        f"{variant.path}:{variant.header_line}: unknown grid rule {rule!r} "
        f"({op.name} knows: {', '.join(op.grid_rules)})"
    )


def check_grid(grid: int | tuple[int, ...]) -> None:
    x, y = (grid, 1) if isinstance(grid, int) else (grid[0], grid[1])
    if x > MAX_GRID_X or y > MAX_GRID_Y:
        raise ValueError(f"grid {grid} exceeds the CUDA limits ({MAX_GRID_X} x {MAX_GRID_Y})")


def uniform(xp: Any, shape: Shape, seed: int, low: float = -1.0, high: float = 1.0) -> Any:
    x = xp.random.default_rng(seed).random(shape, dtype=xp.float32)
    x *= high - low
    x += low
    return x


def dot_tolerance(n: int) -> float:
    """Per-output tolerance factor for a float32 sum of n products, times sum |a_i b_i|.
    Reduce's bound (4 + 64/sqrt n) was exceeded by long serial dot products: on an H200
    (2026-11-22) the worst of 16.7M outputs of a 4096^3 product took 6.1 u sum|ab| with cuBLAS
    and torch, 6.7 u for a 999-long one of ours; 10 leaves room above those."""
    return (10 + 64 / math.sqrt(n)) * UNIT_ROUNDOFF


def requirement(variant: KernelVariant, rows: int, cols: int) -> str | None:
    """The row ops' `requires:` rules: max_cols, min_cols, cols_multiple_of, max_rows."""
    for name, value in variant.requires:
        if name == "max_cols" and cols > value:
            return f"needs cols <= {value} (cols = {cols})"
        if name == "min_cols" and cols < value:
            return f"needs cols >= {value} (cols = {cols})"
        if name == "cols_multiple_of" and cols % value:
            return f"needs cols % {value} == 0 (cols = {cols})"
        if name == "max_rows" and rows > value:
            return f"needs rows <= {value} (rows = {rows}): a 1-D variant"
    return None


class ReadWriteOnce:
    """An op with one input read once and an output of the same size written once."""

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        return 2 * itemsize * math.prod(shape)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * math.prod(shape)

    # FLOPs an element for the roofline (transpose: none; the row ops set theirs)
    FLOPS_AN_ELEMENT = 0

    def arithmetic(self, shape: Shape) -> int:
        return self.FLOPS_AN_ELEMENT * math.prod(shape)

    def device_bytes(self, shape: Shape) -> int:
        # input and output, float64 reference and tolerance, the check's temporaries
        return 40 * math.prod(shape) + (64 << 20)


class RowOp(ReadWriteOnce):
    """An op along the last axis of a 1-D array (one row) or of rows, output shaped like the
    input, whose variants may state `requires:` limits on rows and columns."""

    name: str
    example = "442368x128"

    def check_shape(self, shape: Shape) -> None:
        need_dims(self.name, shape, (1, 2), self.example)

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return requirement(variant, *rows_cols(shape))

    def output_shape(self, shape: Shape) -> Shape:
        return shape
