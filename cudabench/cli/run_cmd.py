"""`cudabench run`: compile, validate, time and table the variants of an op over shapes (the
run use case, usecases/run_benchmarks.py)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer

from cudabench.backends.nvtx import ncu_filter
from cudabench.cli.common import (
    KERNELS_OPTION_HELP,
    ClocksOption,
    ClusterOption,
    CooldownOption,
    DbOption,
    DropThrottledOption,
    EnergyOption,
    FillOption,
    ForceOption,
    GpuModelOption,
    MaxTimeOption,
    MinSamplesOption,
    MinTimeOption,
    OpsOption,
    SettleOption,
    TimerOption,
    WarmupOption,
    err,
    fail_usage,
    given,
    out,
    placement,
    selection,
)
from cudabench.cli.render import Terminal, command_line, exit_with_summary, show_run_notes
from cudabench.cli.verify_cmd import show_verdicts
from cudabench.core.records import ResultRow
from cudabench.present.tables import results_table
from cudabench.record.results import fastest_per_shape, results_document
from cudabench.usecases import run_benchmarks
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Recording


def run_command(
    ctx: typer.Context,
    target: Annotated[
        str, typer.Argument(help="An op name (e.g. reduce) or a YAML config file (e.g. configs/reduce.yaml).")
    ],
    shape: Annotated[
        Optional[list[str]],
        typer.Option(
            "--shape",
            "-s",
            help="Shape such as 442368x128, 2^30 or 1e6; repeatable. "
            "Default: the shapes in configs/<op>.yaml.",
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
        typer.Option(
            "--dtype",
            "-d",
            help="Element type: float32, float16, bfloat16, or all (every dtype "
            "each variant declares); repeatable. Default: the config's (float32). Kernels load "
            "and store the type and accumulate in float32, as CUB and torch do.",
        ),
    ] = None,
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            help="A grid of launch parameters, NAME=V1,V2,... (repeatable): each "
            "variant that declares the names runs once per configuration, e.g. --param "
            "BLOCK=128,256,512 --param ITEMS=4,8 gives 6 rows a shape. `cudabench tune OP --space` "
            "lists a variant's parameters.",
        ),
    ] = None,
    with_ceilings: Annotated[
        bool,
        typer.Option(
            "--ceilings/--no-ceilings",
            help="A `% ceiling` column: each row's throughput against "
            "what this GPU can actually move in the row's mix of reads and writes (or its fp32 "
            "FMA rate), from the ceilings kept for this GPU model, driver and memory clock; the "
            "first run on a GPU measures them (`cudabench ceilings`).",
        ),
    ] = True,
    recalibrate: Annotated[
        bool, typer.Option("--recalibrate", help="Measure this GPU's ceilings again before the run.")
    ] = False,
    tuned: Annotated[
        bool,
        typer.Option(
            "--tuned/--no-tuned",
            help="Run each variant at the configuration `cudabench tune` "
            "saved for this GPU model, op, dtype and shape (results/tuning.json), if any; "
            "--no-tuned: the header's defaults.",
        ),
    ] = True,
    cold: Annotated[
        Optional[bool],
        typer.Option(
            "--cold/--hot",
            help="Cold: flush L2 (a kernel reads 2x its size) before every sample. "
            "Default hot: launches under 50 us timed back to back in CUDA-graph batches, longer "
            "ones singly, isolated.",
        ),
    ] = None,
    timer: TimerOption = None,
    interleave: Annotated[
        Optional[bool],
        typer.Option(
            "--interleave/--no-interleave",
            help="Sample the variants of a shape in turn "
            "(A B A B ...) so clock and thermal drift fall on all alike.",
        ),
    ] = None,
    min_samples: MinSamplesOption = None,
    min_time: MinTimeOption = None,
    max_time: MaxTimeOption = None,
    warmup: WarmupOption = None,
    drop_throttled: DropThrottledOption = None,
    settle: SettleOption = None,
    cooldown: CooldownOption = None,
    clocks: ClocksOption = None,
    fill: FillOption = None,
    energy: EnergyOption = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="A folder (made if missing) for the result files, or NAME.json / NAME.csv for those "
            "files (default results/<timestamp>_<op>.csv/.json).",
        ),
    ] = None,
    force: ForceOption = False,
    tag: Annotated[
        str,
        typer.Option(
            help="A name for this run in the history database (`cudabench history`, `compare --against TAG`)."
        ),
    ] = "",
    db: DbOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON on stdout (the table goes to stderr).")
    ] = False,
    cluster: ClusterOption = None,
    gpu_model: GpuModelOption = None,
    devices: Annotated[
        str,
        typer.Option(
            "--devices",
            "--device",
            help="GPUs to run on: 0, 0,1 or all. One worker process "
            "per GPU takes cases from one queue; each row records its GPU.",
        ),
    ] = "0",
    timeout: Annotated[
        float,
        typer.Option(
            min=1.0,
            help="Seconds a variant may take (compile, validate, time) before its "
            "worker is killed and the row is TIMEOUT.",
        ),
    ] = DEFAULT_TIMEOUT_S,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify/--no-verify",
            help="Before timing, a short `cudabench verify` pass over each variant "
            "(--verify-budget seconds each, edge and random shapes): a variant wrong at some "
            "shape is not timed, and the run exits 1.",
        ),
    ] = False,
    verify_budget: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds per variant of the --verify pass's search (its first checks and their "
            "warm-up come before it: see `cudabench verify --help`).",
        ),
    ] = 10.0,
) -> None:
    """Validate and time every variant of an op (and its library baseline) over shapes.

    Examples: `cudabench run reduce --shape 442368x128`, `cudabench run reduce --shape 2^30
    --variant float4`, `cudabench run configs/reduce.yaml`. Exit status: 0 every kernel
    row correct (a library baseline's FAIL is a note), 1 some kernel row failed (FAIL,
    COMPILE_ERROR, CRASH, ERROR) or the verify pass found a variant wrong, 2 bad usage, 130
    interrupted (the results file keeps the finished rows).
    """
    if recalibrate and not with_ceilings:
        fail_usage(
            "--recalibrate measures the ceilings for the % ceiling column, which --no-ceilings "
            "turns off: give one or the other"
        )
    if given(ctx, "verify_budget") and not verify:
        off = (
            "--no-verify turns off: give one or the other" if given(ctx, "verify") else "is off: add --verify"
        )
        fail_usage(f"--verify-budget sets the seconds of the verify pass, which {off}")
    chosen = selection(
        target,
        shape,
        variant,
        dtype,
        param,
        kernels,
        ops,
        cold=cold,
        interleave=interleave,
        min_samples=min_samples,
        min_time_s=min_time,
        max_time_s=max_time,
        warmup=warmup,
        timer=timer,
        drop_throttled=drop_throttled,
        settle=settle,
        cooldown_c=cooldown,
        clocks=clocks,
        fill=fill,
        energy=energy,
    )
    request = run_benchmarks.RunRequest(
        chosen,
        placement(devices, timeout, cluster, gpu_model, devices_given=given(ctx, "devices")),
        Recording(output, db, tag, force),
        command_line(ctx),
        tuned=tuned,
        ceilings=with_ceilings,
        recalibrate=recalibrate,
        verify_budget=verify_budget if verify else None,
    )
    done = run_benchmarks.run_benchmarks(request, Terminal())
    rows, meta = done.rows, done.meta
    if done.verified:
        show_verdicts(
            list(done.verified),
            f"verify pass before timing: {verify_budget:g} s a variant's search at most",
            err if as_json else out,  # stdout holds the JSON alone
        )

    table = results_table(rows, meta, done.work.op_label)
    (err if as_json else out).print(table)
    show_run_notes(done.notes)
    if as_json:
        out.print_json(json.dumps(results_document(meta, rows)))
    err.print(f"results: {done.csv_path.resolve()}  {done.json_path.resolve()}", soft_wrap=True, markup=False)
    hint = profile_hint(target, rows, meta.command, ops or (), kernels or ())
    if hint:
        err.print(hint, soft_wrap=True, markup=False)
    exit_with_summary(rows, done.work.problems, done.history_error)
    if any(v.verdict.is_wrong for v in done.verified):
        raise typer.Exit(1)  # a variant wrong somewhere was not timed: the run is not all right


def profile_hint(
    target: str,
    rows: list[ResultRow],
    command: str,
    ops: Sequence[Path | str] = (),
    kernels: Sequence[Path | str] = (),
) -> str:
    """How to profile the run's first shape's fastest variant (the starred row): a command
    that works when pasted, so it names the run's --ops and --kernels folders (in full: it
    may be pasted elsewhere), the row's op (not a config's path), dtype and parameters."""
    best = fastest_per_shape(rows)
    star = next((r for r in rows if r.key in best), None)
    if star is None:
        return ""
    words = ["cudabench", "profile", star.op or target, "--shape", star.shape, "--variant", star.variant]
    if star.dtype != "float32":
        words += ["--dtype", star.dtype]
    for p in star.params.split(","):
        if p:
            words += ["--param", p]
    for folder in ops:
        words += ["--ops", str(Path(folder).resolve())]
    for folder in kernels:
        words += ["--kernels", str(Path(folder).resolve())]
    return (
        f"profile it: {shlex.join(words)}"
        f"   (or by hand: ncu --nvtx --nvtx-include "
        f'"{ncu_filter(star.op, star.label, star.shape, star.dtype)}" -c 1 --clock-control none '
        f"{without_output(command)})"
    )


def without_output(command: str) -> str:
    """The command without its --output and its verify pass: run again by hand (under ncu),
    it must not overwrite this run's files (it writes results/<its own time>_<op>.* instead)
    nor verify the variants again."""
    words, kept = shlex.split(command), []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("--output", "-o", "--verify-budget"):
            skip = True
        elif word != "--verify" and not word.startswith(("--output=", "--verify-budget=")):
            kept.append(word)
    return shlex.join(kept)
