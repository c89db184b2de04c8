# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""What the elementwise ops share (kernels/add, sigmoid, relu: seed 002): any 1-D or 2-D
shape, treated as a flat array of n elements, in float32, float16 or bfloat16.

Kernel arguments: the inputs, the output, then `long long n`. Grid rules: `elements` (a
thread per element) and `vec4` (a thread per 16 bytes, 4 floats or 8 halves: the float4
variant divides the *grid* by 4 in float32, as seed 002 says, and handles the last elements,
which the seed reads past the end). The tolerance is `ulps` units of |reference|.
"""

from __future__ import annotations

import math
from typing import Any

from cudabench.core.records import Shape
from cudabench.ops.api import Dims, Op, Scalar, Tensor, elements, packs, uniform

UNIT_ROUNDOFF = 2.0**-24


def operand(name: str) -> Tensor:
    """An input in [-4, 4): both signs, sigmoid's whole curve."""
    return Tensor(name, "rows cols", fill=uniform(-4.0, 4.0))


class Elementwise(Op):
    dims = ("rows", "cols")
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("n", "long long", lambda d: d.rows * d.cols),)
    rules = {"elements": elements(), "vec4": packs(16)}
    requirements: tuple[str, ...] = ()
    flops_an_element = 1  # the roofline's count (sigmoid: negate, exp, add, divide)

    def tolerance(self, xp: Any, ref: Any, *inputs: Any) -> Any:
        return self.ulps * UNIT_ROUNDOFF * xp.abs(ref)

    def flop_count(self, dims: Dims) -> int:
        return self.flops_an_element * dims.rows * dims.cols

    def device_bytes(self, shape: Shape) -> int:
        n = math.prod(shape)
        arity = len(self.inputs)
        return 4 * n * (arity + 1) + 3 * 8 * n + (64 << 20)  # + float64 reference, checks


def torch_function(name: str) -> Any:
    """torch.<name>, looked up when called (torch is imported only if it is there)."""

    def run(*tensors: Any) -> Any:
        import torch

        return getattr(torch, name)(*tensors)

    return run
