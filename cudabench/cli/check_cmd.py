"""`cudabench check`: compile every kernel with nvcc for each target arch. No GPU needed.

Everything that can be known without a GPU is checked: the header (keys, values, the op's grid
rules and `requires:` names, each error at its own line), nvcc's diagnostics, the entry
points in the cubin, and each entry's parameters (count, kinds) against the op's argument list. nvcc
runs in parallel (one process per CPU), with a progress bar on a terminal and a line per
kernel otherwise.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cudabench.build import abi
from cudabench.build.compile import Compiled, compile_variant
from cudabench.build.nvcc import (
    CompileCancelled,
    CompileError,
    ToolchainError,
    cancel_compiles,
    gpu_archs,
    interruptible,
    nvcc_path,
    nvcc_version,
)
from cudabench.cli.common import (
    KERNELS_OPTION_HELP,
    OpsOption,
    err,
    error_line,
    fail_usage,
    out,
    use_ops,
)
from cudabench.core.names import UnknownName
from cudabench.core.records import KernelVariant
from cudabench.ops.registry import all_ops, get_op
from cudabench.ops.space import configurations
from cudabench.usecases.catalogue import catalogue

DEFAULT_ARCHS = ["sm_80", "sm_90"]


def _compile(variant: KernelVariant, arch: str, dtype: str) -> Compiled | CompileError | None:
    """One compile's outcome (None: cancelled by Ctrl-C; ToolchainError is raised)."""
    try:
        return compile_variant(variant, arch, dtype)
    except CompileCancelled:
        return None
    except ToolchainError:
        raise
    except CompileError as exc:
        return exc


def check_command(
    op: Annotated[Optional[str], typer.Argument(help="Only this op's kernels.")] = None,
    arch: Annotated[
        Optional[list[str]], typer.Option(help="Target arch, repeatable (default sm_80 and sm_90).")
    ] = None,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    ops_dirs: OpsOption = None,
    jobs: Annotated[
        Optional[int],
        typer.Option("--jobs", "-j", min=1, help="nvcc processes at once (default: one per CPU)."),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every configuration of each variant's params: space (within its constraints), "
            "not only the header's defaults.",
        ),
    ] = False,
) -> None:
    """Check every kernel variant without a GPU: its header against the op, and nvcc for each
    dtype the header declares and each arch (registers and spills reported). Exits 1 if any
    header is wrong, a kernel fails to compile or lacks an entry point its header names; 2 if
    nvcc itself cannot run."""
    use_ops(ops_dirs)
    try:
        ops = [get_op(op)] if op else list(all_ops().values())
    except UnknownName as exc:
        fail_usage(str(exc))
    archs = arch or DEFAULT_ARCHS
    for a in archs:
        if not a.startswith("sm_") or not a[3:].rstrip("af").isdigit():
            fail_usage(f"--arch {a!r} is not an arch like sm_90")
        known = gpu_archs() if arch else ()  # an arch the user named: does this nvcc have it?
        if known and a.rstrip("af") not in known:
            fail_usage(f"--arch {a!r}: nvcc {nvcc_version()} compiles for {', '.join(known)}")
    found, problems = catalogue(ops, kernels, every_op=op is None)
    found = [(o, [c for v in vs for c in (configurations(v) if every else [v])]) for o, vs in found]
    for problem in problems:
        err.print(error_line(problem, style="red"), soft_wrap=True)
    work = [
        (operation, v, d, a)
        for operation, variants in found
        for v in variants
        if v.kind == "cuda"
        for d in v.dtypes
        for a in archs
    ]  # every (variant, dtype) for every arch
    try:
        nvcc_path()
    except ToolchainError as exc:
        fail_usage(str(exc))
    table = Table(title=f"nvcc {nvcc_version() or '?'}", title_justify="left", header_style="bold")
    for column in ("op", "variant", "dtype", "arch", "status", "registers", "spills (bytes)"):
        table.add_column(column)
    workers = jobs or os.cpu_count() or 1
    outcomes: list[Compiled | CompileError] = []
    progress = Progress(
        TextColumn("compiling {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    # threads are enough: each waits on its own nvcc process. nvcc runs in its own session
    # (interruptible), so a terminal's Ctrl-C reaches this process only: it stops every
    # compile under way and the queued ones, reports nothing more and exits 130
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        with interruptible(), progress:
            task = progress.add_task("", total=len(work))
            futures = [pool.submit(_compile, v, a, d) for _, v, d, a in work]
            for (operation, variant, d, a), future in zip(work, futures):
                try:
                    outcome = future.result()
                except ToolchainError as exc:
                    cancel_compiles()
                    pool.shutdown(wait=True, cancel_futures=True)
                    fail_usage(str(exc))
                if outcome is None:  # cancelled: only a Ctrl-C cancels
                    raise KeyboardInterrupt
                outcomes.append(outcome)
                name = f"{operation.name} {variant.label if every else variant.name} {d} {a}"
                progress.update(task, advance=1, description=name)
                if not err.is_terminal:
                    status = "COMPILE_ERROR" if isinstance(outcome, CompileError) else "ok"
                    err.print(f"{name}: {status}", markup=False)
    except KeyboardInterrupt:
        cancel_compiles()
        pool.shutdown(wait=True, cancel_futures=True)
        err.print(
            f"interrupted: {len(outcomes)} of {len(work)} compiles done; nothing more checked",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    failures = len(problems)
    for (operation, variant, d, a), outcome in zip(work, outcomes):
        if isinstance(outcome, CompileError):
            failures += 1
            shown = variant.label if every else variant.name
            table.add_row(operation.name, shown, d, a, "[red]COMPILE_ERROR[/]", "", "")
            err.print(f"[red]{escape(variant.path)}[/] ({d}, {a}):\n{escape(str(outcome))}", soft_wrap=True)
            continue
        res = outcome.launch_resources
        table.add_row(
            operation.name,
            variant.label if every else variant.name,
            d,
            a,
            "[green]OK[/]",
            "/".join(str(r.registers) for r in res),
            "/".join(str(r.spill_bytes) for r in res),
        )
    out.print(table)
    # each entry's parameters against the op's argument list (the PTX of the first arch)
    for line in abi.check_all([(o, v) for o, vs in found for v in vs], archs[0], workers):
        failures += 1
        err.print(f"[red]error:[/] {escape(line)}", soft_wrap=True)
    if failures:
        err.print(f"[red]{failures} problem(s)[/]")
        raise typer.Exit(1)
