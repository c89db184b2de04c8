"""`sgemm`: C = A B, float32, A is M x K and B is K x N, row-major (seed 002); shape MxNxK.

Kernel arguments: `(const float* A, const float* B, float* C, int M, int N, int K)`. Grid
rules: `tile16` (blocks of 16 x 16 threads, a thread per element of C), `tile32` (32 x 32
threads and 32 x 32 tiles of A and B in shared memory), `tile128` (256 threads compute a
128 x 128 tile of C, 8 x 8 elements each), `blocktile` (a one-dimensional block computes a
BM x BN tile of C: the variant's BM and BN parameters). Metric: GFLOP/s (2 M N K flops) and % of the
fp32 peak. The baseline is cuBLAS through cupy with TF32 off (cupy's default), so the
comparison is exact fp32 against exact fp32.
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

RULES = {"tile16": (16, 16, 16), "tile32": (32, 32, 32), "tile128": (128, 16, 16)}
# rule -> (tile edge of C a block covers, block x, block y)


class Sgemm:
    name = "sgemm"
    about = "C = A B, float32 only (no 16-bit variants yet), A M x K, B K x N; shape MxNxK (seed 002)"
    grid_rules = (*RULES, "blocktile")
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        need_dims(self.name, shape, (3,), "4096x4096x4096 (M x N x K)")
        if max(shape) >= 2**31 or shape[0] * shape[2] >= 2**31 or shape[2] * shape[1] >= 2**31:
            raise ValueError("sgemm takes matrices of fewer than 2^31 elements")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return (shape[0], shape[1])

    def flops(self, shape: Shape) -> int:
        m, n, k = shape
        return 2 * m * n * k

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        m, n, k = shape
        return itemsize * (m * k + k * n + m * n)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        m, n, k = shape
        return itemsize * (m * k + k * n)

    def arithmetic(self, shape: Shape) -> int:
        return self.flops(shape)

    def device_bytes(self, shape: Shape) -> int:
        m, n, k = shape
        return 4 * (m * k + k * n + m * n) + 2 * 8 * (m * k + k * n) + 4 * 8 * m * n + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        m, n, k = shape
        return uniform(xp, (m, k), seed), uniform(xp, (k, n), seed + 1)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        a, b = inputs
        a64, b64 = a.astype(xp.float64), b.astype(xp.float64)
        ref = (a64 @ b64).reshape(-1)
        xp.abs(a64, out=a64)
        xp.abs(b64, out=b64)
        tol = dot_tolerance(a.shape[1]) * (a64 @ b64).reshape(-1)
        return ref, xp.maximum(tol, 1e-30)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        m, n, _ = shape
        if launch.grid == "blocktile":
            bm, bn = variant.value("BM", 0), variant.value("BN", 0)
            if bm <= 0 or bn <= 0:
                raise ValueError(f"{variant.path}: grid rule blocktile needs parameters BM and BN")
            grid = (math.ceil(n / bn), math.ceil(m / bm))
            check_grid(grid)
            return Geometry(grid, launch.block)
        if launch.grid not in RULES:
            raise unknown_rule(self, variant, launch.grid)
        tile, bx, by = RULES[launch.grid]
        if launch.block != bx * by:
            raise ValueError(f"{variant.path}: grid rule {launch.grid} takes block: {bx * by}")
        grid = (math.ceil(n / tile), math.ceil(m / tile))
        check_grid(grid)
        return Geometry(grid, (bx, by) if launch.grid != "tile128" else bx * by)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        a, b = inputs
        m, k = a.shape
        return (a, b, out, np.int32(m), np.int32(b.shape[1]), np.int32(k))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {"cublas": lambda i: i[0] @ i[1]}
        if torch_baselines.available():
            found["torch"] = torch_baselines.call(lambda a, b: a @ b)
        return found


OP = Sgemm()
