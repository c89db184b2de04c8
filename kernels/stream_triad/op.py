# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`stream_triad`: out = a + 3 b, STREAM's triad (cudabench/ops/stream.py)."""

from __future__ import annotations

from typing import Any

from cudabench.op import torch_call
from cudabench.ops.stream import UNIT_ROUNDOFF, Stream

TRIAD_SCALE = 3.0


class StreamTriad(Stream):
    name = "stream_triad"
    about = "out = a + 3 b: the triad ceiling (two reads, one write)"
    reads, writes = 2, 1
    flops_an_element = 2
    library = {
        "cupy": lambda a, b: a + TRIAD_SCALE * b,
        "torch": torch_call(lambda a, b: a.add(b, alpha=TRIAD_SCALE)),
    }

    def reference(self, xp: Any, a: Any, b: Any) -> Any:
        return a + TRIAD_SCALE * b  # one FMA rounds once; a multiply and an add, twice

    def tolerance(self, xp: Any, ref: Any, a: Any, b: Any) -> Any:
        return 2 * UNIT_ROUNDOFF * (xp.abs(a) + TRIAD_SCALE * xp.abs(b))
