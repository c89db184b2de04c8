"""A case's problem: fresh inputs in its dtype (or a fill), the float64 reference computed
from them as stored, the tolerance the output must meet, and the yardstick of a row's accuracy
figure: how far the reference's own formula, evaluated in float32 and rounded to the dtype,
lands from the float64 reference."""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from typing import Any

from cudabench.core.dtypes import DType, get_dtype, output_tolerance
from cudabench.core.records import Case, Shape
from cudabench.ops.protocol import Check, OpProtocol, check_output
from cudabench.ops.registry import describe_error

FILLS = ("random", "zeros", "ones")


@dataclass(frozen=True)
class Problem:
    """One call's inputs and what its output must be (flat float64 reference and tolerance);
    `yardstick`: the float32 evaluation's worst |error| (None where there is none)."""

    xp: Any
    inputs: tuple[Any, ...]
    ref: Any
    tol: Any
    yardstick: float | None = None
    note: str = ""  # the tolerance's rule, when the op's reference could not be traced

    def check(self, out: Any) -> Check:
        """The output against the reference (ops/protocol.py's check_output)."""
        found = check_output(self.xp, out, self.ref, self.tol, self.yardstick)
        return dataclasses.replace(found, note=self.note) if self.note else found


def problem(xp: Any, op: OpProtocol, case: Case, seed: int, fill: str = "random") -> Problem:
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
    rule = getattr(op, "tolerance_rule", lambda: "")()
    note = f"tolerance: {rule}" if "could not be traced" in rule else ""
    yardstick = _yardstick(xp, op, inputs, ref, dtype)
    return Problem(xp, inputs, ref, output_tolerance(xp, dtype, ref, tol), yardstick, note)


def _yardstick(xp: Any, op: OpProtocol, inputs: tuple[Any, ...], ref: Any, dtype: DType) -> float | None:
    """The worst |error| of the op's reference evaluated in float32 on these inputs, its
    output rounded to the dtype as a kernel's is; None when the op has no such evaluation."""
    evaluate = getattr(op, "float32_evaluation", None)
    found = evaluate(xp, inputs) if evaluate is not None else None
    if found is None or found.size != ref.size:
        return None
    rounded = found.astype(dtype.array_type()).astype(xp.float64)
    worst = float(xp.nanmax(xp.abs(rounded - ref))) if ref.size else 0.0
    return worst if worst == worst else None  # NaN: the evaluation overflowed


def warm(xp: Any, op: OpProtocol, dtype: str, shapes: tuple[Shape, ...]) -> tuple[int, str]:
    """Each shape's problem made and its reference checked against itself, then dropped: the
    kernels of their references, tolerances and checks compiled now (verify's warm-up,
    verification/warm.py). A shape whose problem cannot be made is passed over (its own check
    says why). Returns the shapes made and the first failure ('' if none; a failure of the
    op's code names its line, registry.describe_error)."""
    made, failed = 0, ""
    for shape in shapes:
        try:
            given = problem(xp, op, Case(op.name, shape, dtype), 0)
            given.check(given.ref.astype(get_dtype(dtype).array_type()))
        except Exception as exc:  # noqa: BLE001 - the shape's own check reports it; the note says
            failed = failed or f"at {'x'.join(map(str, shape))}: {describe_error(exc)}"
            continue
        made += 1
    return made, failed


def seed_of(case: Case, name: str) -> int:
    """Fresh inputs for every (variant, shape), the same from run to run."""
    return zlib.crc32(f"{case.seed}/{case.id}/{name}".encode())
