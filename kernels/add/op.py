# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`add`: out = a + b, elementwise (seed 002); see cudabench/ops/elementwise.py."""

from __future__ import annotations

from typing import Any

from cudabench.op import torch_call
from cudabench.ops.elementwise import Elementwise, operand, torch_function


class Add(Elementwise):
    name = "add"
    about = "out = a + b, elementwise (seed 002)"
    inputs = (operand("a"), operand("b"))
    ulps = 1.0
    library = {"cupy": lambda a, b: a + b, "torch": torch_call(torch_function("add"))}

    def reference(self, xp: Any, a: Any, b: Any) -> Any:
        return a + b
