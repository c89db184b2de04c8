# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""`reduce_max`: max along the last axis, with reduce's shapes, grid rules and kernel
arguments (cudabench/ops/reductions.py).

The inputs are built to catch a wrong starting value: besides rows of uniform [-1, 1) values,
every third row is all negative, and some rows hold -inf or +inf. (Seed 001 starts its max
from FLT_MIN, the smallest positive float: an all-negative row then comes out as 1.2e-38.) A
max is exact, so the reference must be matched exactly, infinities included.
"""

from __future__ import annotations

from typing import Any

from cudabench.op import Shape, torch_call
from cudabench.ops.reductions import RowReduction, rows_of

NEGATIVE_EVERY = 3  # rows r with r % 3 == 1 are all negative
MINUS_INF_EVERY = 7  # rows r with r % 7 == 2 hold a -inf
PLUS_INF_EVERY = 11  # rows r with r % 11 == 5 hold a +inf


class ReduceMax(RowReduction):
    name = "reduce_max"
    about = "max along the last axis (1-D: one value; RxC: R row maxima)"
    library = {
        "cupy": lambda x: x.max(axis=-1),
        "torch": torch_call(lambda x: x.amax(-1)),
    }

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        (x,) = super().make_inputs(xp, shape, seed)  # uniform [-1, 1)
        d = self.dim_values(shape)
        rows, cols = d["rows"], d["cols"]
        view = x.reshape(rows, cols)
        if rows == 1:  # a 1-D input: all negative, with a -inf in the middle
            view -= 2
            view[0, cols // 2] = -xp.inf
            return (x,)
        view[1::NEGATIVE_EVERY] -= 2  # in [-3, -1)
        view[2::MINUS_INF_EVERY, cols // 3] = -xp.inf
        view[5::PLUS_INF_EVERY, (2 * cols) // 3] = xp.inf
        return (x,)

    def reference(self, xp: Any, x: Any) -> Any:
        return rows_of(x).max(axis=-1).astype(xp.float64)

    def tolerance(self, xp: Any, ref: Any, x: Any) -> Any:
        return 0.0  # exact: only equal values pass
