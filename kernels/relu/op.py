# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`relu`: out = max(x, 0), elementwise (seed 002); see cudabench/ops/elementwise.py."""

from __future__ import annotations

from typing import Any

import numpy as np

from cudabench.op import torch_call, xp_of
from cudabench.ops.elementwise import Elementwise, operand, torch_function


class Relu(Elementwise):
    name = "relu"
    about = "out = max(x, 0), elementwise (seed 002)"
    inputs = (operand("x"),)
    ulps = 0.0
    library = {
        "cupy": lambda x: xp_of(x).maximum(x, np.float32(0)),
        "torch": torch_call(torch_function("relu")),
    }

    def reference(self, xp: Any, x: Any) -> Any:
        return xp.maximum(x, 0.0)
