# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`sigmoid`: out = 1 / (1 + exp(-x)), elementwise, in float (seed 002); see
cudabench/ops/elementwise.py."""

from __future__ import annotations

from typing import Any

from cudabench.op import torch_call, xp_of
from cudabench.ops.elementwise import Elementwise, operand, torch_function


class Sigmoid(Elementwise):
    name = "sigmoid"
    about = "out = 1 / (1 + exp(-x)), elementwise, in float (seed 002)"
    inputs = (operand("x"),)
    ulps = 16.0
    flops_an_element = 4  # negate, exp, add, divide
    library = {
        "cupy": lambda x: 1 / (1 + xp_of(x).exp(-x)),
        "torch": torch_call(torch_function("sigmoid")),
    }

    def reference(self, xp: Any, x: Any) -> Any:
        return 1.0 / (1.0 + xp.exp(-x))
