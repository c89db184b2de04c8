"""`cudabench tolerance OP -s SHAPE`: how an op's tolerance is made at one shape, and whether
a correct float32 kernel has room under it, without a GPU.

The case's inputs are drawn as a run draws them (measure/problem.py, on NumPy), the float64
reference and the tolerance computed the same way, and then measured against it: the op's
own formula evaluated in float32 (the yardstick of a row's `err ×f32`: a correct kernel's
error is about this size), and each Python variant of the op that runs on NumPy, on the
inputs a run gives that variant (its own seed). A yardstick near or above the tolerance
means the tolerance, not the kernels, would FAIL a correct row: the note a run prints when
every library baseline FAILs points here. In a 16-bit dtype the rounding of each output
takes nearly all of the part of the tolerance added for it, so whether correct kernels have
room is judged before that rounding: the float32 evaluation against the op's float32
tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cudabench.core.dtypes import DType, get_dtype
from cudabench.core.errors import UsageError
from cudabench.core.names import UnknownName
from cudabench.core.records import Case, KernelVariant, Shape
from cudabench.core.shapes import shape_text
from cudabench.measure.problem import Problem, problem, seed_of
from cudabench.ops import pyvariants, registry
from cudabench.ops.api import OWN_TOLERANCE
from cudabench.ops.discovery import discover
from cudabench.ops.protocol import OpProtocol, check_output


class ToleranceError(UsageError):
    """Bad input to `tolerance` (an unknown op or dtype, a shape the op does not take or this
    machine's memory cannot hold), or an op whose inputs or reference raise."""


@dataclass(frozen=True)
class Measured:
    """One evaluation against the tolerance: its worst |err| over the tolerance there (below
    1 passes), how many outputs were outside, and where the worst one is."""

    name: str
    ratio: float
    wrong: int
    where: int
    note: str = ""  # why it was not measured (a variant that needs a GPU), or its error


@dataclass(frozen=True)
class ToleranceReport:
    """The tolerance of one case: its rule, its range (absolute and relative to |reference|),
    and the float32 evaluation and Python variants measured against it."""

    op: str
    shape: str
    dtype: str
    rule: str
    outputs: int
    tol_min: float
    tol_median: float
    tol_max: float
    relative_median: float  # median of tol / |reference| over the nonzero references
    measured: tuple[Measured, ...]

    @property
    def room(self) -> bool:
        """Whether the float32 evaluation passes with room: under half the op's float32
        tolerance (in a 16-bit dtype, before its output is rounded to the dtype)."""
        names = (FLOAT32, UNROUNDED) if self.dtype == "float32" else (UNROUNDED,)
        first = next((m for m in self.measured if m.name in names and not m.note), None)
        return first is None or first.ratio < 0.5

    @property
    def own(self) -> bool:
        """Whether the op writes its own tolerance() (else it is traced or the fallback)."""
        return self.rule == OWN_TOLERANCE


FLOAT32 = "float32 evaluation"
UNROUNDED = "float32 evaluation, unrounded, vs the float32 tolerance"


def explain_tolerance(
    op_name: str, shape: Shape, dtype: str = "float32", ops: list[Path] | None = None
) -> ToleranceReport:
    """Draw the case's inputs as a run does (on NumPy), make its reference and tolerance,
    and measure the float32 evaluation and the NumPy-capable Python variants against it."""
    try:
        registry.use_ops(ops)
        op = registry.get_op(op_name)
        get_dtype(dtype)
    except (UnknownName, registry.OpsFolderError, ValueError) as exc:
        raise ToleranceError(str(exc)) from None
    try:
        op.check_shape(shape)
    except ValueError as exc:  # worded as run words it
        raise ToleranceError(f"shape {shape_text(shape)}: {exc}") from None
    case = Case(op=op.name, shape=shape, dtype=dtype)
    need, free = int(op.device_bytes(shape)), _host_memory()
    if free is not None and need > free:
        raise ToleranceError(
            f"{op.name} at {case.shape_text} needs about {need / 2**30:.1f} GiB of host memory "
            f"(inputs, the float64 reference and the tolerance on NumPy); {free / 2**30:.1f} GiB "
            "is available: take a smaller shape (the tolerance's rule is the same at every size)"
        )
    try:
        given = problem(np, op, case, seed_of(case, "tolerance"))
    except MemoryError as exc:
        raise ToleranceError(f"{op.name} at {case.shape_text}: out of host memory ({exc})") from None
    except Exception as exc:  # the op's own reference or inputs failed: its line, as a run's ERROR row
        raised = registry.describe_error(exc, registry.op_folder(op.name))
        raise ToleranceError(
            f"{op.name} at {case.shape_text}: the op's inputs or reference raised {raised}"
        ) from None
    tol, ref = given.tol.reshape(-1), given.ref.reshape(-1)
    nonzero = np.abs(ref) > 0
    relative = float(np.median(tol[nonzero] / np.abs(ref[nonzero]))) if nonzero.any() else float("inf")
    measured = _float32(op, given, get_dtype(dtype))
    found, _ = discover(op.name, [])
    for variant in (v for v in found if v.kind == "python" and dtype in v.dtypes):
        measured.append(_variant(op, variant, case))
    return ToleranceReport(
        op=op.name,
        shape=case.shape_text,
        dtype=dtype,
        rule=getattr(op, "tolerance_rule", lambda: "the op's own expected()")(),
        outputs=int(ref.size),
        tol_min=float(tol.min()) if tol.size else 0.0,
        tol_median=float(np.median(tol)) if tol.size else 0.0,
        tol_max=float(tol.max()) if tol.size else 0.0,
        relative_median=relative,
        measured=tuple(measured),
    )


def _host_memory() -> int | None:
    """Bytes of host memory available now (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _float32(op: OpProtocol, given: Problem, dtype: DType) -> list[Measured]:
    """The op's own formula evaluated in float32, rounded to the dtype as a kernel's output;
    in a 16-bit dtype also unrounded, against the op's float32 tolerance (without the part
    added for the output's rounding)."""
    evaluate = getattr(op, "float32_evaluation", None)
    found = evaluate(np, given.inputs) if evaluate is not None else None
    if found is None:
        return [
            Measured(
                FLOAT32,
                0.0,
                0,
                0,
                "the op's reference does not evaluate in float32 (it raised, or made float64 arrays "
                "itself: xp.zeros, xp.arange and the like default to float64; dtype=x.dtype keeps it)",
            )
        ]
    check = check_output(np, found.astype(dtype.array_type()), given.ref, given.tol)
    measured = [Measured(FLOAT32, check.ratio, check.wrong, check.where)]
    if dtype.name != "float32":
        _, tol32 = op.expected(np, given.inputs)
        unrounded = check_output(np, found, given.ref, tol32)
        measured.append(Measured(UNROUNDED, unrounded.ratio, unrounded.wrong, unrounded.where))
    return measured


def _variant(op: OpProtocol, variant: KernelVariant, case: Case) -> Measured:
    """A Python variant of the op called as a run calls it: on the inputs a run draws for it
    (its own seed), checked against their reference and tolerance."""
    unmet = op.unmet(variant, case.shape)
    if unmet:  # as a run skips it: its requires= rule this shape out
        return Measured(variant.name, 0.0, 0, 0, f"not at this shape: {unmet}")
    try:
        given = problem(np, op, case, seed_of(case, variant.name))
        fn, info = pyvariants.load(variant)
        reason = pyvariants.unavailable(info, "fake")
        if reason:
            return Measured(variant.name, 0.0, 0, 0, reason)
        out = np.empty(op.output_shape(case.shape), dtype=given.inputs[0].dtype)
        call, produced = pyvariants.bind(fn, info, None, given.inputs, out)
        call()
        check = given.check(pyvariants.as_output(produced(), out, variant.name))
    except Exception as exc:  # a variant's own failure is its line, not the command's end
        return Measured(variant.name, 0.0, 0, 0, registry.describe_error(exc, registry.op_folder(op.name)))
    return Measured(variant.name, check.ratio, check.wrong, check.where)
