# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`stream_read`: out[0] = sum of a, the read ceiling (cudabench/ops/stream.py)."""

from __future__ import annotations

from typing import Any

from cudabench.op import Tensor
from cudabench.ops.reductions import sum_tolerance
from cudabench.ops.stream import Stream


class StreamRead(Stream):
    name = "stream_read"
    about = "out = sum(a): the read ceiling (a block sum and an atomicAdd a block)"
    reads, writes = 1, 0
    flops_an_element = 1
    outputs = (Tensor("out", (1,)),)
    float64_inputs = False
    # the reference: CUB's device sum (CuPy's)
    library = {"cupy": lambda a, b: a.sum(keepdims=True)}

    def reference(self, xp: Any, a: Any, b: Any) -> Any:
        return a.sum(axis=-1, dtype=xp.float64)  # a sum of n: reduce's one row

    def tolerance(self, xp: Any, ref: Any, a: Any, b: Any) -> Any:
        return sum_tolerance(xp, a)  # and its bound
