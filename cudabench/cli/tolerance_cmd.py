"""`cudabench tolerance`: how a case's tolerance is made, and whether correct float32 has room
under it (usecases/explain_tolerance.py does the work, on NumPy: no GPU)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cudabench.cli.common import OpsOption, err, fail_usage, out
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.usecases.explain_tolerance import ToleranceError, explain_tolerance


def tolerance_command(
    op: Annotated[str, typer.Argument(help="The op (catalogue, or yours with --ops).")],
    shape: Annotated[str, typer.Option("--shape", "-s", help="One shape, e.g. 256x4096 or 2^20.")],
    dtype: Annotated[str, typer.Option("--dtype", "-d", help="float32, float16 or bfloat16.")] = "float32",
    ops: OpsOption = None,
) -> None:
    """Show how OP's tolerance is made at one shape (the traced float32 error bound of its
    reference, its own tolerance(), or the |reference|-relative fallback and why), its range,
    and how the reference's own float32 evaluation and the op's NumPy-capable Python
    variants sit under it: a correct float32 kernel errs about as much as the float32
    evaluation. Runs on NumPy, without a GPU. Exit status: 0, or 1 when the float32
    evaluation uses more than half of the op's float32 tolerance (in a 16-bit dtype, before
    its output is rounded: that rounding takes nearly all of the part added for it), which
    is too tight for correct kernels; 2 for bad usage."""
    try:
        report = explain_tolerance(op, parse_shape(shape), dtype, list(ops) if ops else None)
    except (ToleranceError, ShapeError) as exc:
        fail_usage(str(exc))
    out.print(f"{report.op} {report.shape} {report.dtype}: {report.outputs:,} outputs", markup=False)
    out.print(f"rule: {report.rule}", markup=False, soft_wrap=True)
    out.print(
        f"tolerance: {report.tol_min:.3g} to {report.tol_max:.3g} (median {report.tol_median:.3g}; "
        f"median relative to |reference| {report.relative_median:.3g})",
        markup=False,
    )
    table = Table(header_style="bold")
    for column, justify in (
        ("against the tolerance", "left"),
        ("worst |err|/tol", "right"),
        ("outside", "right"),
        ("note", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for m in report.measured:
        ratio = "" if m.note else f"{m.ratio:.3g}"
        table.add_row(m.name, ratio, "" if m.note else f"{m.wrong:,}", m.note)
    out.print(table)
    if not report.room:
        fix = "loosen its tolerance()" if report.own else "give the op a tolerance() of its own"
        err.print(
            "the float32 evaluation of the reference uses more than half of the op's float32 "
            f"tolerance: correct kernels may FAIL; {fix} (docs/guide/verdicts.md)",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)
