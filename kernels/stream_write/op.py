# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`stream_write`: out = 0, the write ceiling (cudabench/ops/stream.py)."""

from __future__ import annotations

from typing import Any

from cudabench.ops.stream import Stream, memset_zeros


class StreamWrite(Stream):
    name = "stream_write"
    about = "out = 0: the write ceiling"
    reads, writes = 0, 1
    float64_inputs = False
    library = {"memset": memset_zeros}

    def reference(self, xp: Any, a: Any, b: Any) -> Any:
        return xp.zeros(a.size, dtype=xp.float64)

    def tolerance(self, xp: Any, ref: Any, a: Any, b: Any) -> Any:
        return 0.0  # exact
