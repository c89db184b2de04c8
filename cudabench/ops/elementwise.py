"""Elementwise ops from seed 002: `add` (out = a + b), `sigmoid`, `relu`; float32, any shape
(treated as a flat array of n elements), in float32, float16 or bfloat16.

Kernel arguments: `add(const float* a, const float* b, float* out, long long n)`, the unary
ones `(const float* x, float* out, long long n)`. Grid rules: `elements` (a thread per
element) and `vec4` (a thread per 16 bytes, 4 floats or 8 halves: the float4 variant divides
the *grid* by 4 in float32, as seed 002 says, and handles the last elements, which the seed
reads past the end).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudabench.ops import torch_baselines
from cudabench.ops.base import Geometry, array_module
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

UNIT_ROUNDOFF = 2.0**-24
MAX_GRID = 2**31 - 1


@dataclass(frozen=True)
class Elementwise:
    name: str
    about: str
    arity: int
    exact: Callable[..., Any]  # float64 reference from float64 arrays (xp-generic)
    ulps: float  # tolerance: ulps * u * |reference|
    library: Callable[..., Any]  # the cupy expression, xp-generic like `exact`
    torch_fn: Callable[..., Any] | None = None
    flops_an_element: int = 1  # the roofline's count (sigmoid: negate, exp, add, divide)
    grid_rules: tuple[str, ...] = ("elements", "vec4")
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        if not 1 <= len(shape) <= 2:
            raise ValueError(f"{self.name} takes a 1-D (n) or 2-D shape, got {len(shape)}-D")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return shape

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * math.prod(shape) * (self.arity + 1)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * math.prod(shape) * self.arity

    def arithmetic(self, shape: Shape) -> int:
        return self.flops_an_element * math.prod(shape)

    def device_bytes(self, shape: Shape) -> int:
        n = math.prod(shape)
        return 4 * n * (self.arity + 1) + 3 * 8 * n + (64 << 20)  # + float64 reference, checks

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        rng = xp.random.default_rng(seed)
        inputs = []
        for _ in range(self.arity):
            x = rng.random(shape, dtype=xp.float32)
            x *= 8
            x -= 4  # uniform in [-4, 4): both signs, sigmoid's whole curve
            inputs.append(x)
        return tuple(inputs)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        ref = self.exact(xp, *(x.astype(xp.float64) for x in inputs)).reshape(-1)
        return ref, xp.maximum(self.ulps * UNIT_ROUNDOFF * xp.abs(ref), 1e-30)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        n = math.prod(shape)
        # vec4: a thread per 16 bytes, 4 floats or 8 halves (kPack in common/dtype.cuh)
        per_thread = {"elements": 1, "vec4": 16 // itemsize}.get(launch.grid)
        if per_thread is None:
            raise ValueError(
                f"{variant.path}:{variant.header_line}: unknown grid rule {launch.grid!r} "
                f"({self.name} knows: {', '.join(self.grid_rules)})"
            )
        grid = max(1, math.ceil(math.ceil(n / per_thread) / launch.block))
        if grid > MAX_GRID:
            raise ValueError(f"grid of {grid} blocks exceeds the CUDA limit {MAX_GRID}")
        return Geometry(grid, launch.block)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        return (*inputs, out, np.int64(inputs[0].size))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found = {"cupy": lambda inputs: self.library(array_module(inputs[0]), *inputs)}
        if self.torch_fn is not None and torch_baselines.available():
            found["torch"] = torch_baselines.call(self.torch_fn)
        return found


def _sigmoid(xp: Any, x: Any) -> Any:
    return 1.0 / (1.0 + xp.exp(-x))


def _torch(name: str) -> Callable[..., Any]:
    def run(*tensors: Any) -> Any:
        import torch

        return getattr(torch, name)(*tensors)

    return run


ADD = Elementwise(
    "add", "out = a + b, elementwise (seed 002)", 2,
    exact=lambda xp, a, b: a + b, ulps=1.0, library=lambda xp, a, b: a + b, torch_fn=_torch("add"),
)  # fmt: skip
SIGMOID = Elementwise(
    "sigmoid", "out = 1 / (1 + exp(-x)), elementwise, in float (seed 002)", 1,
    exact=_sigmoid, ulps=16.0,
    library=lambda xp, x: 1 / (1 + xp.exp(-x)), torch_fn=_torch("sigmoid"), flops_an_element=4,
)  # fmt: skip
RELU = Elementwise(
    "relu", "out = max(x, 0), elementwise (seed 002)", 1,
    exact=lambda xp, x: xp.maximum(x, 0.0), ulps=0.0,
    library=lambda xp, x: xp.maximum(x, np.float32(0)), torch_fn=_torch("relu"),
)  # fmt: skip

