"""A case's problem: fresh inputs in its dtype (or a fill), the float64 reference computed
from them as stored, and the tolerance the output must meet."""

from __future__ import annotations

import zlib
from typing import Any

from cudabench.core.dtypes import get_dtype, output_tolerance
from cudabench.core.records import Case
from cudabench.ops.protocol import OpProtocol

FILLS = ("random", "zeros", "ones")


def problem(
    xp: Any, op: OpProtocol, case: Case, seed: int, fill: str = "random"
) -> tuple[tuple[Any, ...], Any, Any]:
    """Fresh inputs in the case's dtype, and the float64 reference computed from them as
    stored, with the op's tolerance plus the rounding of each output to the dtype. `fill`
    zeros or ones: every floating-point input so filled instead (a zero fill draws less power
    and can run at higher clocks under a power cap); integer inputs (indices) stay drawn."""
    dtype = get_dtype(case.dtype)
    inputs = op.make_inputs(xp, case.shape, seed)
    if fill != "random":
        value = 0.0 if fill == "zeros" else 1.0
        inputs = tuple(xp.full_like(x, value) if x.dtype.kind == "f" else x for x in inputs)
    if dtype.name != "float32":  # drawn in float32, then rounded once to the element type
        inputs = tuple(x.astype(dtype.array_type()) for x in inputs)
    ref, tol = op.expected(xp, inputs)
    return inputs, ref, output_tolerance(xp, dtype, ref, tol)


def seed_of(case: Case, name: str) -> int:
    """Fresh inputs for every (variant, shape), the same from run to run."""
    return zlib.crc32(f"{case.seed}/{case.id}/{name}".encode())
