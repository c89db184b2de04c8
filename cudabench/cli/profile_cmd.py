"""`cudabench profile`: run the asked cases under Nsight Compute, one launch each, and table
ncu's metrics beside cudabench's own time.

Steps: plan the cases as `run` does; hand the plan to a child as data and run `ncu ... python
-m cudabench.profiled REQUEST` (ncu.profile_command, profiled.py); read the report's raw page
back (ncu.parse_raw_csv) and join its kernels to the rows by NVTX range; time the same cases
normally (unless --no-time); write the results files (rows with their `ncu` metrics) and the
report `<stem>.ncu-rep` side by side.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import subprocess
import sys
import tempfile
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
    fail_usage,
    out,
)
from cudabench.cli.render import (
    command_line,
    error,
    exit_with_summary,
    note,
    progress_bar,
    show_history_error,
    show_plan,
    show_run_notes,
)
from cudabench.core.records import ProfileMetrics, ResultRow, RowKey, Status
from cudabench.execution.ncu import (
    NcuError,
    cold_l2_note,
    find_ncu,
    import_command,
    metrics_by_case,
    ncu_messages,
    parse_raw_csv,
    profile_command,
)
from cudabench.execution.plan import Plan, plan
from cudabench.execution.pool import DEFAULT_TIMEOUT_S
from cudabench.execution.session import Local, Session, results_stem
from cudabench.present.tables import profile_table
from cudabench.profiled import ProfileRequest, for_profiling, write_request
from cudabench.record.results import ResultsError, now_utc, read_results, stem_file, write_results

NO_KERNELS = "No kernels were profiled"


def _cases(work: Plan) -> list[tuple[str, str, str, str]]:
    return [
        (job.case.op, name, job.case.shape_text, job.case.dtype)
        for job in work.jobs
        for name in [*(v.label for v in job.variants), *job.baselines]
    ]


def _run_ncu(command: list[str], report: Path) -> None:
    """Run ncu; exit 1 with its own message if it fails or profiles nothing."""
    with err.status(f"profiling under ncu ({len(command)} arguments) ..."):
        try:
            proc = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            fail_usage(f"cannot start {command[0]}: {exc.strerror}")
    output = proc.stdout + proc.stderr
    messages = ncu_messages(output)
    # the exit status is cudabench's own (1 when a row failed; the rows say which)
    refused = any(m.startswith("==ERROR==") for m in messages)
    if refused or not report.exists() or NO_KERNELS in output:
        lines = messages or output.strip().splitlines()[-10:] or [f"exit status {proc.returncode}"]
        error(f"ncu did not profile the cases (exit status {proc.returncode}):")
        for line in lines:
            err.print(f"  {line}", markup=False, soft_wrap=True)
        raise typer.Exit(1)


def _read_report(ncu: str, report: Path, extra: list[str]) -> dict[RowKey, ProfileMetrics]:
    proc = subprocess.run(import_command(ncu, report), capture_output=True, text=True)
    if proc.returncode != 0:
        error(
            f"ncu could not read {report}: "
            f"{' '.join(ncu_messages(proc.stdout + proc.stderr)) or proc.stderr.strip()}"
        )
        raise typer.Exit(1)
    try:
        return metrics_by_case(parse_raw_csv(proc.stdout, extra), extra)
    except NcuError as exc:
        error(str(exc))
        raise typer.Exit(1) from None


def _join(
    rows: list[ResultRow], metrics: dict[RowKey, ProfileMetrics], launches: dict[str, int], cold: bool = False
) -> list[ResultRow]:
    """Each row with its range's metrics; a note where ncu saw no kernel, or an unexpected
    number of them (a variant's header says how many launches a call makes), and for a
    `cold` profile where the launch's reads hit L2 heavily (ncu.cold_l2_note)."""
    joined = []
    for row in rows:
        found = metrics.get(row.key)
        note = ""
        if found is None and row.status is Status.OK:
            note = "ncu profiled no kernel in this row's range"
        elif found and row.label in launches and found.kernels != launches[row.label]:
            note = f"ncu saw {found.kernels} kernels, the variant launches {launches[row.label]}"
        notes = "; ".join(n for n in (row.notes, note, cold_l2_note(found) if cold else "") if n)
        joined.append(dataclasses.replace(row, ncu=found, notes=notes))
    return joined


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
            help="Folder for the result files and report, or a file stem "
            "(default results/<timestamp>_<op>.csv/.json/.ncu-rep).",
        ),
    ] = None,
    device: Annotated[
        int,
        typer.Option(
            "--devices",
            "--device",
            min=0,
            help="The GPU to profile on (one index: ncu profiles one process).",
        ),
    ] = 0,
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
    extra = [m.strip() for m in (metrics or "").split(",") if m.strip()]
    work = plan(target, shape, variant, kernels, dtype, param, cold=cold, timer=timer, ops=ops)
    show_plan(work, notes=False)
    show_plan(work)
    started = now_utc()
    try:
        ncu_path = find_ncu(ncu)
    except NcuError as exc:
        if not print_command:
            fail_usage(str(exc))
        ncu_path = ncu or "ncu"
    stem = results_stem(output, work.op_label, started, force)
    report = stem_file(stem, ".ncu-rep")
    scratch = Path(tempfile.gettempdir()) / f"cudabench-profile-{stem.name}"
    request = scratch / "request.pickle"
    child = [sys.executable, "-m", "cudabench.profiled", str(request)]
    cases = _cases(work)
    command = profile_command(
        ncu_path,
        cases,
        report,
        child,
        cold=cold,
        section_set=section_set,
        sections=section or [],
        metrics=extra,
    )
    if print_command:
        write_request(
            ProfileRequest(for_profiling(work, warmup), device, scratch / "profiled.json", command_line(ctx)),
            request,
        )
        out.print(shlex.join(command), markup=False, soft_wrap=True)
        return

    err.print(
        f"ncu: {len(cases)} cases, one launch each; --clock-control none (the GPU's own "
        f"clocks, as cudabench times), --cache-control {'all' if cold else 'none'} "
        f"({'caches flushed before each kernel' if cold else 'hot caches'})",
        soft_wrap=True,
        markup=False,
    )
    report.unlink(missing_ok=True)
    write_request(
        ProfileRequest(for_profiling(work, warmup), device, scratch / "profiled.json", command_line(ctx)),
        request,
    )
    try:
        _run_ncu(command, report)
        metrics_found = _read_report(ncu_path, report, extra)
        child_meta, child_rows = read_results(scratch / "profiled.json")
    except ResultsError as exc:
        error(f"the profiled run left no results: {exc}")
        raise typer.Exit(1) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    launches = {
        v.label: len(v.launches) for job in work.jobs for v in job.variants if v.kind == "cuda"
    }  # a Python variant's kernel count is its own
    history_error = ""
    if time_it:
        with Session.open(Local((device,), timeout), work.timing.timer) as session:
            work = session.prepare(work, tuned=False)
            sweep = session.start(
                work.op_label,
                work.timing,
                command_line(ctx),
                output=stem_file(stem, ".json"),
                db=db,
                tag=tag,
                force=True,
                started=started,
            )
            show_history_error(session)
            with progress_bar(work.rows_expected) as bar:
                sweep.listener = bar
                sweep.run(work.jobs)
            rows = _join(sweep.rows, metrics_found, launches, cold)
            csv_path, json_path = session.finish(rows)  # recorded with ncu's metrics
        meta, history_error = sweep.meta, session.problems
    else:  # ncu's rows only: nothing timed, nothing for the history
        meta = dataclasses.replace(child_meta, command=command_line(ctx), started=started, complete=True)
        rows = _join(child_rows, metrics_found, launches, cold)
        csv_path, json_path = write_results(stem, meta, rows)
    out.print(profile_table(rows, meta, work.op_label))
    show_run_notes(meta)
    for row in rows if cold else []:  # the table cuts notes short: this one whole
        if warning := cold_l2_note(row.ncu):
            note(f"{row.key}: {warning}")
    err.print(
        f"results: {csv_path}  {json_path}\nncu report: {report} (open with ncu-ui, or "
        f"ncu --import {report} --page details)",
        soft_wrap=True,
        markup=False,
    )
    exit_with_summary(rows, work.problems, history_error)
