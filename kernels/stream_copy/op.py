# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`stream_copy`: out = a, the copy ceiling (cudabench/ops/stream.py)."""

from __future__ import annotations

from typing import Any

from cudabench.ops.stream import Stream, memcpy


class StreamCopy(Stream):
    name = "stream_copy"
    about = "out = a: the copy ceiling (one read, one write)"
    reads, writes = 1, 1
    float64_inputs = False
    library = {"memcpy": memcpy}

    def reference(self, xp: Any, a: Any, b: Any) -> Any:
        return a.astype(xp.float64)

    def tolerance(self, xp: Any, ref: Any, a: Any, b: Any) -> Any:
        return 0.0  # exact
