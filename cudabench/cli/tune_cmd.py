"""`cudabench tune`: search launch parameters and save the best configurations to the tuning
file `run` reads (the tune use case, usecases/tune_params.py), render them, and plot the
search."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from cudabench.cli.common import (
    KERNELS_OPTION_HELP,
    ClusterOption,
    DbOption,
    ForceOption,
    GpuModelOption,
    OpsOption,
    TimerOption,
    err,
    given,
    out,
    placement,
    selection,
)
from cudabench.cli.render import Terminal, command_line, error, show_run_notes
from cudabench.core.records import Case, ResultRow, RunMeta, Status, parse_params
from cudabench.present.tables import title
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Recording
from cudabench.usecases.tune_params import (
    FINAL_TOP,
    Costs,
    Outcome,
    Saved,
    SearchSpace,
    TuneRequest,
    plan_tuning,
    tune_params,
)


def _space_table(spaces: list[tuple[Case, SearchSpace]]) -> Table:
    table = Table(title="tunable spaces (no GPU needed)", title_justify="left", header_style="bold")
    for name in (
        "op",
        "variant",
        "shape",
        "dtype",
        "parameters",
        "constraints",
        "valid",
        "of",
        "held at default",
    ):
        table.add_column(name, justify="right" if name in ("valid", "of") else "left")
    for case, space in spaces:
        params = "; ".join(f"{n}={','.join(map(str, v))}" for n, v in space.space.params)
        table.add_row(
            case.op,
            space.variant.name,
            case.shape_text,
            case.dtype,
            params,
            "; ".join(space.variant.constraints),
            str(space.size),
            str(space.full_size),
            ", ".join(space.held),
        )
    return table


def _mark(outcome: Outcome, row: ResultRow) -> str:
    """★ best, ≈ tie (within the noise of the best), and which row is the default."""
    tie = next(
        (f"{'★ best' if i == 0 else '≈ tie'}" for i, r in enumerate(outcome.ties) if r.label == row.label), ""
    )
    is_default = outcome.default is not None and row.label == outcome.default.label
    return f"{tie} (default)" if tie and is_default else tie or ("default" if is_default else "")


def _outcome_table(outcome: Outcome) -> Table:
    """The final round: each row's varying parameters, mark, time and speedups."""
    case = outcome.case
    varying = [n for n, values in outcome.space.space.params if len(values) > 1]
    shown = varying or [n for n, _ in outcome.space.variant.params]
    table = Table(
        title=f"{case.op} {outcome.space.variant.name} {case.shape_text} {case.dtype}: final "
        f"round, interleaved (the top {FINAL_TOP}, the default, the library){_apart(outcome)}",
        title_justify="left",
        header_style="bold",
    )
    flops = any(r.gflops for r in outcome.final)
    for name in [
        *shown,
        "",
        "time µs",
        "±spread",
        "GFLOP/s" if flops else "GB/s",
        "% peak",
        "vs default",
        "vs library",
    ]:
        table.add_column(name, justify="left" if name == "" else "right")
    default_time = outcome.default.time_us if outcome.default else None
    for row in outcome.final:
        values = parse_params(row.params)
        cells = (
            [row.variant, *[""] * (len(shown) - 1)]
            if row.is_baseline
            else [str(values.get(n, "")) for n in shown]
        )
        mark = _mark(outcome, row)
        ok = row.status is Status.OK and row.time_us
        versus = f"{default_time / row.time_us:.2f}×" if ok and default_time else ""  # type: ignore[operator]
        table.add_row(
            *cells,
            mark if ok else row.status.value,
            f"{row.time_us:,.2f}" if ok else "",
            f"{100 * (row.spread or 0):.1f}%" if ok else "",
            f"{(row.gflops if flops else row.gbps) or 0:,.0f}" if ok else "",
            f"{row.pct_peak:.1f}" if ok and row.pct_peak else "",
            versus if not row.is_baseline else "",
            f"{row.speedup:.2f}×" if ok and row.speedup else "",
            style="bold" if mark.startswith("★") else ("dim" if row.is_baseline else ""),
        )
    return table


def _apart(outcome: Outcome) -> str:
    """The baselines timed after the final round, not in it (their library was importing)."""
    apart = outcome.costs.apart if outcome.costs else ()
    return f"; {', '.join(apart)} timed after it, apart" if apart else ""


def costs_line(costs: Costs) -> str:
    """Where the search's time went: per configuration of its rounds, the workers' set-up and
    timing and the host's share; then nvcc ahead of the GPU, the strategy, the final round."""
    wall, setup, timing, host = costs.per_configuration_ms()
    workers = f" ({costs.workers} workers at a time)" if costs.workers > 1 else ""
    nvcc = ""  # none where nothing compiles ahead (the fake backend)
    if costs.compile_s is not None and costs.compiled:
        nvcc = (
            f"nvcc {costs.compiled} configurations, {costs.compile_s:.1f} s ahead of the GPU, "
            f"{costs.waited_s:.1f} s waited for; "
        )
    elif costs.compile_s is not None:
        nvcc = "every configuration in the compile cache; "
    first = (
        f"; each worker's first took {costs.first_setup_s / costs.first_workers:.2f} s, once: "
        f"the case's inputs and reference, CuPy's first kernels"
        if costs.first_workers
        else ""
    )
    return (
        f"where the time went: {costs.configurations} configurations in {costs.rounds_s:.2f} s, "
        f"{wall:.0f} ms each: set-up {setup:.0f} ms (module load, inputs, float64 reference, "
        f"check{first}), timing {timing:.0f} ms (warm-up, samples, check after){workers}, host "
        f"{host:.0f} ms (worker round trips, results file, progress); {nvcc}strategy "
        f"{costs.strategy_s:.2f} s; final interleaved round {costs.final_s:.2f} s{_final_split(costs)}"
    )


def _final_split(costs: Costs) -> str:
    """The final round's set-up and timing, and its slowest set-up (a library's first call);
    then the baselines timed apart after it, with the wait for their library."""
    where = "on one GPU: " if costs.workers > 1 else ""
    wait = (
        f"{costs.library_wait_s:.1f} s waiting for the worker importing its libraries"
        if costs.library_wait_s >= 0.05
        else ""
    )
    split = ""
    if costs.final_slowest is not None:
        label, seconds = costs.final_slowest
        split = (
            f" ({where}{wait + ', ' if wait and not costs.apart else ''}set-up "
            f"{costs.final_setup_s:.1f} s, the longest {label} {seconds:.1f} s; timing "
            f"{costs.final_measure_s:.1f} s, its rows in turn)"
        )
    if costs.apart:  # timed after the search, once a worker had imported their library
        waited = f" ({wait})" if wait else ""
        split += f"; then {', '.join(costs.apart)} apart {costs.apart_s:.1f} s{waited}"
    return split


def _summary(outcome: Outcome) -> str:
    space = outcome.space
    held = f"; held at default for this shape: {', '.join(space.held)}" if space.held else ""
    line = (
        f"{outcome.strategy}: {outcome.measured} configurations measured "
        f"(space {space.size} valid of {space.full_size}{held})"
    )
    if outcome.uncounted:
        line += f", {outcome.uncounted} N/A or skipped (not counted)"
    if outcome.failed:
        line += f", {outcome.failed} failed (see the results file)"
    line += f" in {outcome.wall_s:.2f} s"
    if outcome.best is None:
        return line + "; no configuration ran correctly"
    line += f"; best {outcome.best.params}"
    if len(outcome.ties) > 1:
        line += f"; {len(outcome.ties) - 1} more within the noise of the best (ties, not ranked)"
    gain = outcome.speedup_over_default
    if gain:
        line += f"; {gain:.2f}× the default"
    return line


def tune_command(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            help="An op name (e.g. reduce) or a YAML config (e.g. configs/tune_seeds.yaml, whose "
            "params: narrow the spaces)."
        ),
    ],
    shape: Annotated[
        Optional[list[str]],
        typer.Option(
            "--shape", "-s", help="Shape(s) to tune at, each its own search (default: the config's shapes)."
        ),
    ] = None,
    variant: Annotated[
        Optional[list[str]],
        typer.Option("--variant", "-v", help="Variant(s) to tune (default: every variant with params:)."),
    ] = None,
    dtype: Annotated[
        Optional[list[str]],
        typer.Option("--dtype", "-d", help="Element type(s), as for run; each its own search."),
    ] = None,
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            help="Narrow a parameter to these values, NAME=V1,V2,... (repeatable); "
            "values outside the header's list are allowed.",
        ),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            help="exhaustive, random, optuna (Optuna's TPE sampler, ask-and-tell), or auto: "
            "exhaustive when the space fits the budget, else optuna."
        ),
    ] = "auto",
    budget: Annotated[
        int,
        typer.Option(
            min=1, help="Configurations to measure at most per search (N/A and skipped ones do not count)."
        ),
    ] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the random and optuna strategies.")] = 0,
    space_only: Annotated[
        bool,
        typer.Option(
            "--space", help="Show the spaces (parameters, constraints, size) and exit; needs no GPU."
        ),
    ] = False,
    save: Annotated[
        bool,
        typer.Option(
            "--save/--no-save",
            help="Save each best configuration to the tuning file "
            "(results/tuning.json, $CUDABENCH_TUNING) that `run` uses by default.",
        ),
    ] = True,
    plot: Annotated[
        bool,
        typer.Option(
            "--plot/--no-plot",
            help="Write a PNG per search: time over the two parameters with "
            "the most values (a heat map), or against the one that varies.",
        ),
    ] = True,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    ops: OpsOption = None,
    cold: Annotated[
        Optional[bool],
        typer.Option("--cold/--hot", help="L2 mode of every measurement, as for run (default hot)."),
    ] = None,
    timer: TimerOption = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="A folder (made if missing) for the results, or NAME.json / NAME.csv for those "
            "files (default results/<timestamp>_tune_<op>.csv/.json/.png).",
        ),
    ] = None,
    force: ForceOption = False,
    tag: Annotated[str, typer.Option(help="A name for this search in the history database.")] = "",
    db: DbOption = None,
    cluster: ClusterOption = None,
    gpu_model: GpuModelOption = None,
    devices: Annotated[
        str,
        typer.Option(
            "--devices",
            "--device",
            help="GPUs to measure on: 0, 0,1 or all (configurations are spread over them).",
        ),
    ] = "0",
    timeout: Annotated[
        float,
        typer.Option(
            min=1.0,
            help="Seconds a configuration may take before its worker is killed "
            "(TIMEOUT row; the search goes on).",
        ),
    ] = DEFAULT_TIMEOUT_S,
) -> None:
    """Search each variant's launch parameters (block size, elements per thread, rows per
    warp, blocks per SM, tiles: its header's params:) for the fastest correct configuration.

    Every configuration is validated against the float64 reference and timed; the best few
    are timed again interleaved with the default and the library; ties within the noise are
    said. Examples: `cudabench tune reduce -v float4 -s 2^24`, `cudabench tune softmax -v
    block_smem -s 1728x32768 --strategy random --budget 100`, `cudabench tune reduce -v
    float4 -s 2^24 --space`. Exit status: 0 a best configuration found for every search,
    1 a search found none, 2 bad usage, 130 interrupted (every measured row is kept).
    """
    request = TuneRequest(
        selection(target, shape, variant, dtype, param, kernels, ops, cold=cold, timer=timer),
        strategy=strategy,
        budget=budget,
        seed=seed,
        save=save,
        placement=placement(devices, timeout, cluster, gpu_model, devices_given=given(ctx, "devices")),
        recording=Recording(output, db, tag, force),
        command=command_line(ctx),
    )
    terminal = Terminal()
    if space_only:
        out.print(_space_table(plan_tuning(request, terminal).spaces))
        return
    tuned = tune_params(request, terminal)
    done, outcomes = tuned.run, tuned.outcomes
    meta = done.meta
    out.print(title(meta, tuned.label, [r for o in outcomes for r in o.rows]))
    show_run_notes(done.notes)
    for outcome, saved in zip(outcomes, tuned.saved):
        out.print(_outcome_table(outcome))
        err.print(_summary(outcome), soft_wrap=True, markup=False)
        if outcome.costs is not None:
            err.print(costs_line(outcome.costs), soft_wrap=True, markup=False)
        if plot:
            _plot(outcome, done.stem, meta)
        if saved is not None:
            _saved(outcome, saved)
    err.print(
        f"results (every configuration): {done.csv_path.resolve()}  {done.json_path.resolve()}",
        soft_wrap=True,
        markup=False,
    )
    if done.history_error:
        error(done.history_error)
    if tuned.exit_status:
        raise typer.Exit(tuned.exit_status)


def _plot(outcome: Outcome, stem: Path, meta: RunMeta) -> None:
    from cudabench.present.plots import plot_tuning

    case = outcome.case
    path = stem.parent / f"{stem.name}_{outcome.space.variant.name}_{case.shape_text}_{case.dtype}.png"
    names = tuple(n for n, _ in outcome.space.variant.params)
    # the searched configurations only: the header's default, timed in the final round, lies
    # outside a narrowed space (--param, a config's params:) and would add an axis of one cell
    searched = {tuple(sorted(c.items())) for c in outcome.space.configs}
    rows = [r for r in outcome.rows if r.params and tuple(sorted(parse_params(r.params).items())) in searched]
    try:
        drew = plot_tuning(
            rows,
            names,
            path,
            f"{case.op} {outcome.space.variant.name} {case.shape_text} {case.dtype} on {meta.device.name}",
        )
    except ValueError as exc:
        err.print(f"no plot: {exc}", markup=False)
        return
    err.print(f"plot ({drew}): {path.resolve()}", soft_wrap=True, markup=False)


def _saved(outcome: Outcome, saved: Saved) -> None:
    """Where a best configuration was saved, or why it was not."""
    best = outcome.best
    if saved.path is None or best is None:
        error(saved.error)
        return
    err.print(
        f"saved to {saved.path.resolve()}: `cudabench run {best.op} -s {best.shape}` now runs "
        f"{best.variant} at {best.params} on this GPU model",
        soft_wrap=True,
        markup=False,
    )
