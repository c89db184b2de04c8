# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`reduce`: sum along the last axis (a 1-D shape is one row, reduced to one value; RxC gives
R sums), accumulated in float32. The declarations, the `elements` and `segments` grid rules
and the kernel argument list are the reduce family's (cudabench/ops/reductions.py)."""

from __future__ import annotations

from typing import Any

from cudabench.op import torch_call
from cudabench.ops.reductions import RowReduction, rows_of, sum_tolerance


class Reduce(RowReduction):
    name = "reduce"
    about = "sum along the last axis, float32 accumulation (1-D: one value; RxC: R row sums)"
    library = {
        "cupy": lambda x: x.sum(axis=-1),
        "torch": torch_call(lambda x: x.sum(-1)),
    }

    def reference(self, xp: Any, x: Any) -> Any:
        return rows_of(x).sum(axis=-1, dtype=xp.float64)

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        return sum_tolerance(xp, x)
