"""`cudabench check`: compile every kernel with nvcc for each target arch. No GPU needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from cudabench.cli.common import KERNELS_OPTION_HELP, err, fail_usage, out, variants_for
from cudabench.compile import CompileError, NvccMissing, compile_variant, nvcc_version
from cudabench.ops import OPS, UnknownName, get_op

DEFAULT_ARCHS = ["sm_80", "sm_90"]


def check_command(
    op: Annotated[Optional[str], typer.Argument(help="Only this op's kernels.")] = None,
    arch: Annotated[
        Optional[list[str]], typer.Option(help="Target arch, repeatable (default sm_80 and sm_90).")
    ] = None,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
) -> None:
    """Compile every kernel variant for each arch and report registers and spills.
    Exits 1 if any fails to compile (or lacks an entry point its header names)."""
    try:
        ops = [get_op(op)] if op else list(OPS.values())
    except UnknownName as exc:
        fail_usage(str(exc))
    archs = arch or DEFAULT_ARCHS
    for a in archs:
        if not a.startswith("sm_") or not a[3:].rstrip("a").isdigit():
            fail_usage(f"--arch {a!r} is not an arch like sm_90")
    table = Table(title=f"nvcc {nvcc_version() or '?'}", title_justify="left", header_style="bold")
    for column in ("op", "variant", "arch", "status", "registers", "spills (bytes)"):
        table.add_column(column)
    failures = 0
    for operation in ops:
        variants, problems = variants_for(operation.name, kernels)
        for problem in problems:
            err.print(f"[red]error:[/] {problem}", soft_wrap=True)
        failures += len(problems)
        for variant in variants:
            for a in archs:
                try:
                    compiled = compile_variant(variant, a)
                except NvccMissing as exc:
                    fail_usage(str(exc))
                except CompileError as exc:
                    failures += 1
                    table.add_row(operation.name, variant.name, a, "[red]COMPILE_ERROR[/]", "", "")
                    err.print(f"[red]{variant.path}[/] ({a}):\n{exc}", soft_wrap=True)
                    continue
                res = [compiled.resources[e] for e in variant.entries]
                table.add_row(
                    operation.name, variant.name, a, "[green]OK[/]",
                    "/".join(str(r.registers) for r in res),
                    "/".join(str(r.spill_bytes) for r in res),
                )  # fmt: skip
    out.print(table)
    if failures:
        err.print(f"[red]{failures} problem(s)[/]")
        raise typer.Exit(1)
