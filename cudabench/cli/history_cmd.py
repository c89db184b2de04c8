"""`cudabench history` (one case's runs over time, changes outside the noise marked) and
`cudabench import` (older results files into the history database): the history use cases
(usecases/case_history.py) query, this renders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from cudabench.cli.common import DbOption, err, error_line, fail_usage, out
from cudabench.cli.compare_cmd import parse_threshold
from cudabench.core.errors import SweepError
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.present.compare_tables import verdict_text
from cudabench.usecases.case_history import CaseHistory, HistoryQuery, case_history, import_results
from cudabench.usecases.compare_runs import DEFAULT_THRESHOLD, Verdict


def history_command(
    op: Annotated[str, typer.Argument(help="The op (e.g. reduce).")],
    variant: Annotated[Optional[str], typer.Option("--variant", "-v", help="One variant.")] = None,
    shape: Annotated[Optional[str], typer.Option("--shape", "-s", help="One shape.")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", "-d", help="One dtype.")] = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            help="Runs on this GPU model only (default: the newest run's model, per case; 'all' "
            "for every model)."
        ),
    ] = None,
    last: Annotated[int, typer.Option(min=1, help="The newest N runs of each case.")] = 20,
    threshold: Annotated[
        str, typer.Option(help="Smallest change worth a verdict (e.g. 2%).")
    ] = f"{100 * DEFAULT_THRESHOLD:g}%",
    plot: Annotated[
        Optional[Path], typer.Option(help="Also draw the times over the runs to this PNG/SVG/PDF.")
    ] = None,
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            help="Judge a run against the one before although their fingerprints differ (driver, "
            "power limit, clock policy, ...: compare --help); such verdicts are marked *. By "
            "default they read NOT COMPARABLE and the differing keys."
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """One case's runs over time (commit, GPU, tag, time, spread), each change against the
    run before judged as compare judges it: FASTER / SLOWER outside the noise, SAME, UNSURE;
    NOT COMPARABLE (and the keys) where the two runs' fingerprints differ.

    Example: `cudabench history reduce -v float4 -s 2^24 --plot float4.png`.
    """
    value = parse_threshold(threshold)
    try:
        asked_shape = parse_shape(shape) if shape is not None else None
    except ShapeError as exc:
        raise SweepError(str(exc)) from None
    query = HistoryQuery(op, variant, asked_shape, dtype, gpu, last, value, allow_mismatch, db)
    found = case_history(query)
    series = found.series
    table = Table(title=f"history of {op} ({found.db})", title_justify="left", header_style="bold")
    # energy and the SM clock only where some run measured them (--energy; NVML)
    energy = any(e.row.energy_mj is not None for case in series for e in case.entries)
    clocks = any(e.row.sm_mhz_median is not None for case in series for e in case.entries)
    numbers = ("run", "time µs", "±spread", "mJ", "SM MHz")
    for name in (
        "case",
        "run",
        "started (UTC)",
        "commit",
        "GPU",
        "tag",
        "status",
        "time µs",
        "±spread",
        *(["mJ"] if energy else []),
        *(["SM MHz"] if clocks else []),
        "vs previous",
    ):
        table.add_column(name, justify="right" if name in numbers else "left")
    footnotes: dict[str, None] = {}
    for index, case in enumerate(series):
        key = case.key
        if index:
            table.add_section()
        for position, entry in enumerate(case.entries):
            run, row, pair = entry.run, entry.row, entry.mark
            mark = pair if isinstance(pair, str) else verdict_text(pair)
            if entry.mismatch:
                footnotes[entry.mismatch] = None
            style = {
                Verdict.SLOWER.value: "bold red",
                Verdict.FASTER.value: "green",
                Verdict.NOT_COMPARABLE.value: "yellow",
            }.get(entry.verdict, "")
            table.add_row(
                f"{key.label} {key.shape} {key.dtype}" if position == 0 else "",
                str(run.id),
                run.started.replace("+00:00", "")[:19],
                run.git_sha[:9] + ("*" if run.git_dirty else ""),
                run.gpu,
                run.tag,
                row.status.value,
                f"{row.time_us:,.2f}" if row.time_us else "",
                f"{100 * row.spread:.1f}%" if row.spread is not None else "",
                *([f"{row.energy_mj:,.3f}" if row.energy_mj is not None else ""] if energy else []),
                *([str(row.sm_mhz_median or "")] if clocks else []),
                mark,
                style=style,
            )
    out.print(table)
    if any(entry.run.git_dirty for case in found.series for entry in case.entries):
        err.print("commit*: the kernels folder had uncommitted changes", markup=False)
    if footnotes and allow_mismatch:
        err.print(
            f"verdict*: judged across runs whose fingerprints differ (--allow-mismatch): "
            f"{'; '.join(footnotes)}",
            soft_wrap=True,
            markup=False,
        )
    if plot is not None:
        _plot(found, plot)


def _plot(found: CaseHistory, path: Path) -> None:
    from cudabench.present.plots import plot_history

    series = [(case.key, [(e.run, e.row) for e in case.entries]) for case in found.series]
    try:
        plot_history(series, path, found.op)
    except (OSError, ValueError) as exc:
        fail_usage(f"--plot {path}: {exc}")
    err.print(f"plot: {path.resolve()}", soft_wrap=True, markup=False)


def import_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Results files (.json, or the .csv beside one) or folders (every results file "
            "in one) to add to the history."
        ),
    ],
    tag: Annotated[str, typer.Option(help="A tag for the imported runs.")] = "",
    db: DbOption = None,
) -> None:
    """Add older results files to the history database (each once: a file imported before
    is skipped). A file that is not a results file is one line; the others still import,
    and the command exits 2."""
    done = import_results(files, tag, db)
    for line in done.bad:
        err.print(error_line(line), soft_wrap=True)
    err.print(
        f"imported {done.imported} run(s), {done.rows} row(s) into {done.db}"
        + (f"; {done.skipped} already there" if done.skipped else ""),
        soft_wrap=True,
        markup=False,
    )
    if done.bad:
        raise typer.Exit(2)
