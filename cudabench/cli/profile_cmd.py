"""`cudabench profile`: run the asked cases under Nsight Compute, one launch each, and table
ncu's metrics beside cudabench's own time (the profile use case, usecases/profile_ncu.py,
does the work: the child ncu profiles, the report read back and joined, the timed run)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer

from cudabench.cli.common import (
    KERNELS_OPTION_HELP,
    DbOption,
    ForceOption,
    OpsOption,
    TimerOption,
    err,
    one_device,
    out,
    selection,
)
from cudabench.cli.render import (
    Terminal,
    command_line,
    exit_failed,
    exit_with_summary,
    note,
    show_run_notes,
)
from cudabench.present.tables import profile_table
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Failed, Recording
from cudabench.usecases.profile_ncu import Profiling, ncu_command, profile_cases


def profile_command_cli(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="An op name (e.g. reduce) or a YAML config file.")],
    shape: Annotated[
        Optional[list[str]],
        typer.Option(
            "--shape",
            "-s",
            help="Shape such as 442368x128 or 2^30; repeatable. Default: the shapes in configs/<op>.yaml.",
        ),
    ] = None,
    variant: Annotated[
        Optional[list[str]],
        typer.Option("--variant", "-v", help="Only these variants (repeatable); baselines always run."),
    ] = None,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    ops: OpsOption = None,
    dtype: Annotated[
        Optional[list[str]],
        typer.Option("--dtype", "-d", help="Element type(s), as for run (default float32)."),
    ] = None,
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            help="Launch parameters NAME=V1,V2,... as for run (default: each "
            "variant's header defaults; profile does not read the tuning file).",
        ),
    ] = None,
    section_set: Annotated[
        Optional[str],
        typer.Option(
            "--set",
            help="ncu section set to collect as well (e.g. full, detailed); the report "
            "keeps it for `ncu-ui`.",
        ),
    ] = None,
    section: Annotated[
        Optional[list[str]],
        typer.Option(help="ncu section to collect as well (e.g. MemoryWorkloadAnalysis); repeatable."),
    ] = None,
    metrics: Annotated[
        Optional[str],
        typer.Option(help="Extra ncu metrics, comma-separated; kept in the results under ncu.extra."),
    ] = None,
    cold: Annotated[
        bool,
        typer.Option(
            "--cold/--hot",
            help="Cold (default): ncu flushes the caches before each kernel "
            "(--cache-control all), cudabench's own timing flushes L2 before each sample, and "
            "the L2 hit rate of each launch's reads is shown (`L2 hit %`; above 50% a warning). "
            "Hot: none of these.",
        ),
    ] = True,
    timer: TimerOption = None,
    force: ForceOption = False,
    tag: Annotated[str, typer.Option(help="A name for the timed run in the history database.")] = "",
    db: DbOption = None,
    time_it: Annotated[
        bool,
        typer.Option(
            "--time/--no-time", help="Also time the cases normally, to show cudabench's time beside ncu's."
        ),
    ] = True,
    warmup: Annotated[
        int, typer.Option(min=0, help="Launches before the profiled one, outside its range.")
    ] = 1,
    ncu: Annotated[
        Optional[str],
        typer.Option("--ncu", help="The ncu executable (default: ncu on PATH or in the CUDA toolkit)."),
    ] = None,
    print_command: Annotated[
        bool, typer.Option("--print-command", help="Print the ncu command line (to run by hand) and exit.")
    ] = False,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="A folder (made if missing) for the result files and report, or NAME.json / "
            "NAME.csv for those files (default results/<timestamp>_<op>.csv/.json/.ncu-rep).",
        ),
    ] = None,
    device: Annotated[
        str,
        typer.Option(
            "--devices",
            "--device",
            help="The GPU to profile on (one index: ncu profiles one process).",
        ),
    ] = "0",
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds a variant may take in the timed run before it is TIMEOUT.")
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Profile exactly the asked cases with Nsight Compute, one launch each, and show its
    metrics (duration, DRAM / memory / SM throughput, occupancy, registers, shared memory,
    DRAM bytes, a bound-by hint) beside cudabench's own time. Cold (the default), also the
    L2 hit rate of the launch's reads (`L2 hit %`): a row above 50% gets a warning, as the
    flush may not have emptied L2 (or the kernel rereads its data).

    Examples: `cudabench profile reduce --shape 442368x128`, `cudabench profile reduce
    --shape 2^30 --variant shuffle --set full`, `... --print-command`. ncu runs with
    --clock-control none: the GPU's own clocks, as cudabench times. Exit status: 0, 1 if ncu
    failed or a row failed, 2 bad usage.
    """
    profiling = Profiling(
        selection(target, shape, variant, dtype, param, kernels, ops, timer=timer),
        device=one_device(device, "ncu profiles one process"),
        timeout_s=timeout,
        recording=Recording(output, db, tag, force),
        ncu=ncu,
        section_set=section_set,
        sections=tuple(section or ()),
        metrics=tuple(m.strip() for m in (metrics or "").split(",") if m.strip()),
        cold=cold,
        time_it=time_it,
        warmup=warmup,
        command=command_line(ctx),
    )
    terminal = Terminal()
    if print_command:
        out.print(shlex.join(ncu_command(profiling, terminal)), markup=False, soft_wrap=True)
        return
    try:
        done = profile_cases(profiling, terminal)
    except Failed as exc:
        exit_failed(exc)
    out.print(profile_table(done.rows, done.meta, done.work.op_label))
    show_run_notes(done.meta.notes)
    for key, warning in done.l2_warnings:  # the table cuts notes short: this one whole
        note(f"{key}: {warning}")
    err.print(
        f"results: {done.csv_path}  {done.json_path}\nncu report: {done.report} (open with ncu-ui, or "
        f"ncu --import {done.report} --page details)",
        soft_wrap=True,
        markup=False,
    )
    exit_with_summary(done.rows, done.work.problems, done.history_error)
