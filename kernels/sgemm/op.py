# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
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
from typing import Any

from cudabench.op import Geometry, Launching, Shape, check_grid, torch_call
from cudabench.ops.matrix import Product

RULES = {"tile16": (16, 16, 16), "tile32": (32, 32, 32), "tile128": (128, 16, 16)}
# rule -> (tile edge of C a block covers, block x, block y)


def _tiled(rule: str) -> Any:
    def geometry(at: Launching) -> Geometry:
        tile, bx, by = RULES[rule]
        if at.block != bx * by:
            raise ValueError(f"{at.variant.path}: grid rule {rule} takes block: {bx * by}")
        grid = (math.ceil(at.dims.N / tile), math.ceil(at.dims.M / tile))
        check_grid(grid)
        return Geometry(grid, (bx, by) if rule != "tile128" else bx * by)

    return geometry


def _blocktile(at: Launching) -> Geometry:
    bm, bn = at.value("BM", 0), at.value("BN", 0)
    if bm <= 0 or bn <= 0:
        raise ValueError(f"{at.variant.path}: grid rule blocktile needs parameters BM and BN")
    grid = (math.ceil(at.dims.N / bn), math.ceil(at.dims.M / bm))
    check_grid(grid)
    return Geometry(grid, at.block)


class Sgemm(Product):
    name = "sgemm"
    about = "C = A B, float32 only (no 16-bit variants yet), A M x K, B K x N; shape MxNxK (seed 002)"
    example = "4096x4096x4096 (M x N x K)"
    rules = {**{rule: _tiled(rule) for rule in RULES}, "blocktile": _blocktile}
    # a header may bound K (`requires: {max_K: ...}`): naive walks all of K in one thread
    requirements = ("max_K",)
    library = {"cublas": lambda a, b: a @ b, "torch": torch_call(lambda a, b: a @ b)}

    def check_shape(self, shape: Shape) -> None:
        super().check_shape(shape)
        if max(shape) >= 2**31 or shape[0] * shape[2] >= 2**31 or shape[2] * shape[1] >= 2**31:
            raise ValueError("sgemm takes matrices of fewer than 2^31 elements")
