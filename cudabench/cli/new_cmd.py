"""`cudabench new op NAME --in DIR`: a starter op folder (scaffold.py) that passes `check`
without a GPU and validates on one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from cudabench.build.scaffold import STYLES, ScaffoldError, new_op
from cudabench.cli.common import err, fail_usage, out

app = typer.Typer(no_args_is_help=True, help="Start something new: `cudabench new op NAME --in DIR`.")


@app.command("op")
def new_op_command(
    name: Annotated[
        str,
        typer.Argument(
            help="The op's name (a C identifier): its folder, and the prefix of its kernels' entry names."
        ),
    ],
    folder: Annotated[
        Path,
        typer.Option(
            "--in", help="The folder of your ops (made if need be); the op goes in <folder>/<name>/."
        ),
    ],
    style: Annotated[
        str,
        typer.Option(
            help=f"The starter: {' or '.join(STYLES)} (out = x / "
            "sqrt(mean(x^2) + eps) along rows, or SiLU "
            "elementwise)."
        ),
    ] = "row",
) -> None:
    """Write DIR/NAME/op.py (the op: tensors, scalars, grid rule, float64 reference, a CuPy
    baseline) and DIR/NAME/naive.cu (a kernel taking the op's argument list). Refuses to
    overwrite an existing folder (exit 2)."""
    try:
        written = new_op(name, folder, style)
    except ScaffoldError as exc:
        fail_usage(str(exc))
    for path in written.files:
        out.print(f"wrote {escape(str(path))}", markup=False)
    shape = "4096x8192" if style == "row" else "2^24"
    err.print(
        f"next: cudabench list --ops {folder}\n"
        f"      cudabench check --ops {folder} {name}\n"
        f"      cudabench run {name} --ops {folder} -s {shape}\n"
        "(docs/guide/ops.md: every declaration of op.py)",
        markup=False,
        soft_wrap=True,
    )
