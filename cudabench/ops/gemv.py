"""`gemv`: y = A x for an M x K float32 matrix A (seed 002 sgemv), any M and K.

Kernel arguments: `(const float* A, const float* x, float* y, long long M, long long K)`.
Grid rule `warp_rows`: a warp per row, the grid covers all rows. The bytes that must move are
A once, x once and y once; the tolerance is reduce's bound on sum |A_ij x_j| per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry
from cudabench.ops.matrix import check_grid, dot_tolerance, need_dims, uniform, unknown_rule
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape


class Gemv:
    name = "gemv"
    about = "y = A x, A is M x K, float32 accumulation (seed 002 sgemv)"
    grid_rules = ("warp_rows",)
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        need_dims(self.name, shape, (2,), "16384x16384")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return (shape[0],)

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        m, k = shape
        return itemsize * (m * k + k + m)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        m, k = shape
        return itemsize * (m * k + k)

    def arithmetic(self, shape: Shape) -> int:
        m, k = shape
        return 2 * m * k

    def device_bytes(self, shape: Shape) -> int:
        m, k = shape
        return 4 * m * k + 16 * m * k + (64 << 20)  # A, its float64 copies for the reference

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        m, k = shape
        return uniform(xp, (m, k), seed), uniform(xp, (k,), seed + 1)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        a, x = inputs
        a64, x64 = a.astype(xp.float64), x.astype(xp.float64)
        ref = a64 @ x64
        xp.abs(a64, out=a64)
        tol = dot_tolerance(a.shape[1]) * (a64 @ xp.abs(x64))
        return ref, xp.maximum(tol, 1e-30)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        if launch.grid != "warp_rows":
            raise unknown_rule(self, variant, launch.grid)
        grid = math.ceil(shape[0] / (launch.block // 32))
        check_grid(grid)
        return Geometry(grid, launch.block)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        a, x = inputs
        return (a, x, out, np.int64(a.shape[0]), np.int64(a.shape[1]))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {"cupy": lambda i: i[0] @ i[1]}
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(lambda a, x: a @ x)
        return found


OP = Gemv()
