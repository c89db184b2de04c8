"""The catalogue of operations: one module per op, listed here by the name the CLI uses."""

from __future__ import annotations

import difflib

from cudabench.ops import (
    elementwise, gemv, reduce, reduce_max, reduce_scale, sgemm, softmax, stream, transpose,
)
from cudabench.ops.base import Op

OPS: dict[str, Op] = {
    op.name: op
    for op in (
        reduce.OP, reduce_max.OP, reduce_scale.OP, softmax.OP, elementwise.ADD,
        elementwise.SIGMOID, elementwise.RELU, transpose.OP, gemv.OP, sgemm.OP,
        stream.READ, stream.WRITE, stream.COPY, stream.TRIAD, stream.FMA,
    )
}


class UnknownName(KeyError):
    """An op or variant name that does not exist; the message suggests the closest ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def closest(name: str, choices: list[str]) -> str:
    near = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else f" (choose from {', '.join(choices)})"


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise UnknownName(f"unknown op {name!r}{closest(name, sorted(OPS))}") from None
