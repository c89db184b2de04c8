# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`transpose`: out = x.T for an M x N matrix (seed 002), any M and N.

Kernel arguments: `(const T* in, T* out, int M, int N)`. Grid rules `tile32` and `tile64`: a
block of threads shaped (32, block / 32) covers a 32 x 32 (or 64 x 64) tile; the grid is
(ceil(N / tile), ceil(M / tile)). `tile64` reads the variant's TILE parameter (its tile side,
default 64), and its block may be any multiple of 32 that divides into it.
"""

from __future__ import annotations

import math
from typing import Any

from cudabench.op import (
    Geometry,
    Launching,
    Op,
    Scalar,
    Shape,
    Tensor,
    check_grid,
    torch_call,
    uniform,
    xp_of,
)


def _tiles(side: int) -> Any:
    def rule(at: Launching) -> Geometry:
        # tile64's kernel takes its tile side and rows of threads as parameters (TILE,
        # BLOCK); tile32's is fixed at 32 x 32 with 32 x 8 threads
        if side == 32 and at.block != 256:
            raise ValueError(f"{at.variant.path}: tile32 takes block: 256 (32 x 8 threads)")
        tile = at.value("TILE", side) if side == 64 else 32
        grid = (math.ceil(at.dims.N / tile), math.ceil(at.dims.M / tile))
        check_grid(grid)
        return Geometry(grid, (32, at.block // 32))

    return rule


class Transpose(Op):
    name = "transpose"
    about = "out = x.T, M x N (seed 002)"
    dims = ("M", "N")
    ranks = (2,)
    example = "8192x8192"
    inputs = (Tensor("x", "M N", fill=uniform(-1.0, 1.0)),)
    outputs = (Tensor("out", "N M"),)
    scalars = (Scalar("M", "int"), Scalar("N", "int"))
    rules = {"tile32": _tiles(32), "tile64": _tiles(64)}
    requirements: tuple[str, ...] = ()
    library = {
        "cupy": lambda x: xp_of(x).ascontiguousarray(x.T),
        "torch": torch_call(lambda x: x.t().contiguous()),
    }

    def check_shape(self, shape: Shape) -> None:
        super().check_shape(shape)
        if max(shape) >= 2**31:
            raise ValueError("transpose takes dimensions below 2^31")

    def reference(self, xp: Any, x: Any) -> Any:
        return xp.ascontiguousarray(x.T)

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        return 0.0  # a copy: exact

    def device_bytes(self, shape: Shape) -> int:
        # input and output, float64 reference and tolerance, the check's temporaries
        return 40 * math.prod(shape) + (64 << 20)
