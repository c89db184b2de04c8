"""`transpose`: out = x.T for an M x N float32 matrix (seed 002), any M and N.

Kernel arguments: `(const float* in, float* out, int M, int N)`. Grid rules `tile32` and
`tile64`: a block of threads shaped (32, block / 32) covers a 32 x 32 (or 64 x 64) tile; the
grid is (ceil(N / tile), ceil(M / tile)). `tile64` reads the variant's TILE parameter (its
tile side, default 64), and its block may be any multiple of 32 that divides into it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry, array_module
from cudabench.ops.matrix import ReadWriteOnce, check_grid, need_dims, uniform, unknown_rule
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

class Transpose(ReadWriteOnce):
    name = "transpose"
    about = "out = x.T, M x N (seed 002)"
    grid_rules = ("tile32", "tile64")
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        need_dims(self.name, shape, (2,), "8192x8192")
        if max(shape) >= 2**31:
            raise ValueError("transpose takes dimensions below 2^31")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return (shape[1], shape[0])

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        return (uniform(xp, shape, seed),)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        ref = xp.ascontiguousarray(inputs[0].T).astype(xp.float64).reshape(-1)
        return ref, xp.full(ref.shape, 1e-30)  # a copy: exact

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        tiles = {"tile32": 32, "tile64": 64}
        if launch.grid not in tiles:
            raise unknown_rule(self, variant, launch.grid)
        # tile64's kernel takes its tile side and rows of threads as parameters (TILE,
        # BLOCK); tile32's is fixed at 32 x 32 with 32 x 8 threads
        tile = variant.value("TILE", tiles[launch.grid]) if launch.grid == "tile64" else 32
        if launch.grid == "tile32" and launch.block != 256:
            raise ValueError(f"{variant.path}: tile32 takes block: 256 (32 x 8 threads)")
        m, n = shape
        grid = (math.ceil(n / tile), math.ceil(m / tile))
        check_grid(grid)
        return Geometry(grid, (32, launch.block // 32))

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        (x,) = inputs
        return (x, out, np.int32(x.shape[0]), np.int32(x.shape[1]))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {
            "cupy": lambda inputs: array_module(inputs[0]).ascontiguousarray(inputs[0].T)
        }
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(lambda x: x.t().contiguous())
        return found


OP = Transpose()
