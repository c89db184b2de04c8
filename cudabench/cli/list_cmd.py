"""`cudabench list`: ops, their variants and baselines, with the one-line "about". No GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from cudabench.cli.common import KERNELS_OPTION_HELP, OpsOption, err, fail_usage, out, use_ops
from cudabench.core.names import UnknownName
from cudabench.ops import torch_baselines
from cudabench.ops.registry import all_ops, get_op
from cudabench.usecases.catalogue import catalogue

SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def list_command(
    op: Annotated[Optional[str], typer.Argument(help="Only this op.")] = None,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    ops_dirs: OpsOption = None,
) -> None:
    """List every op and its variants (built-in, --ops and --kernels): the dtypes each compiles for
    (f32, f16, bf16: `run --dtype`), how it launches, and what it does."""
    use_ops(ops_dirs)
    try:
        ops = [get_op(op)] if op else list(all_ops().values())
    except UnknownName as exc:
        fail_usage(str(exc))
    table = Table(header_style="bold", show_lines=False)
    for column in ("op", "variant", "dtypes", "launch (entry, block, grid rule)", "about"):
        table.add_column(column)
    found, problems = catalogue(ops, kernels, every_op=op is None)
    for index, (operation, variants) in enumerate(found):
        if index:
            table.add_section()
        table.add_row(f"[bold]{operation.name}[/]", "", "", "", escape(operation.about))
        for variant in variants:
            launch = "; ".join(
                f"{ln.entry} ({ln.block_param + '=' if ln.block_param else ''}{ln.block}, {ln.grid})"
                for ln in variant.launches
            )
            if variant.kind == "python":  # a function in a .py file of the op's folder
                launch = f"python: {Path(variant.path).name}:{variant.function or '?'}"
            if variant.params:  # a tunable space: `cudabench tune OP -v NAME --space` says more
                launch += "; tunes " + ", ".join(name for name, _ in variant.params)
            dtypes = ", ".join(SHORT.get(d, d) for d in variant.dtypes)
            table.add_row("", escape(variant.name), dtypes, escape(launch), escape(variant.about))
        for name in operation.baselines():
            table.add_row("", f"[dim]{name}[/]", "", "[dim]baseline[/]", "[dim]library call[/]")
    out.print(table)
    if not torch_baselines.available():
        err.print(
            "note: torch is not importable here, so no torch baselines are listed or run "
            "(pip install -e '.[torch]' adds them)",
            soft_wrap=True,
            markup=False,
        )
    for problem in problems:
        err.print(f"[yellow]warning:[/] {escape(problem)}", soft_wrap=True)
