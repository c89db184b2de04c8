"""`cudabench history` (one case's runs over time, changes outside the noise marked) and
`cudabench import` (older results files into the history database)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from cudabench.cli.common import DbOption, err, error_line, fail_usage, out
from cudabench.cli.compare_cmd import parse_threshold
from cudabench.core.names import UnknownName, closest
from cudabench.core.records import ResultRow, RowKey, Status
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.ops.registry import get_op
from cudabench.present.tables import verdict_text
from cudabench.record.compare import DEFAULT_THRESHOLD, Pair, Verdict, verdict_for
from cudabench.record.fingerprint import ALL, describe, differences
from cudabench.record.history import History, HistoryError, RunInfo
from cudabench.record.results import ResultsError, read_results


def _open(db: Path | None, readonly: bool = False) -> History:
    try:
        return History(db, readonly=readonly).open()
    except HistoryError as exc:
        fail_usage(str(exc))


def _cases(
    history: History, op: str, variant: str | None, shape: str | None, dtype: str | None
) -> list[RowKey]:
    keys = history.keys(op)
    if not keys:
        fail_usage(
            f"no {op} rows in {history.path} yet (every `cudabench run` adds its rows; "
            "`cudabench import results/*.json` adds older runs)"
        )
    if variant is not None:
        names = sorted({k.variant for k in keys})
        if variant not in names:
            fail_usage(
                f"no {op} rows of variant {variant!r} (recorded: {', '.join(names)}){closest(variant, names)}"
            )
        keys = [k for k in keys if k.variant == variant]
    if shape is not None:
        try:
            text = "x".join(str(d) for d in parse_shape(shape))
        except ShapeError as exc:
            fail_usage(str(exc))
        shapes = sorted({k.shape for k in keys})
        if text not in shapes:
            fail_usage(f"no {op} rows at shape {text} (recorded: {', '.join(shapes)})")
        keys = [k for k in keys if k.shape == text]
    if dtype is not None:
        keys = [k for k in keys if k.dtype == dtype]
        if not keys:
            fail_usage(f"no {op} rows in {dtype} with those filters")
    return keys


def _marks(
    found: list[tuple[RunInfo, ResultRow]], threshold: float, allow: Collection[str] = ()
) -> list[Pair | str]:
    """Each row's verdict against the previous correct, timed row of the case (compare's
    statistics: FASTER / SLOWER outside the noise, SAME, UNSURE; NOT_COMPARABLE where the
    two runs' fingerprints differ, unless `allow`ed), or its status change."""
    marks: list[Pair | str] = []
    previous: tuple[RunInfo, ResultRow] | None = None
    for run, row in found:
        if previous is None:
            marks.append("")
        elif row.status is not Status.OK or not row.time_us:
            marks.append(row.status.value)
        else:
            mismatch = differences(previous[0].fingerprint, run.fingerprint)
            marks.append(verdict_for(previous[1], row, threshold, mismatch, allow))
        if row.status is Status.OK and row.time_us:
            previous = (run, row)
    return marks


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
    try:
        get_op(op)
    except UnknownName as exc:
        fail_usage(str(exc))
    value = parse_threshold(threshold)
    with _open(db, readonly=True) as history:
        cases = _cases(history, op, variant, shape, dtype)
        series = []
        for key in cases:
            found = history.case_rows(key, None if gpu in (None, "all") else gpu, last)
            if gpu is None and found:  # the newest run's GPU model: times across models mislead
                found = [f for f in found if f[0].gpu == found[-1][0].gpu]
            if found:
                series.append((key, found))
    if not series:
        fail_usage(f"no rows of those cases on GPU {gpu!r}")
    table = Table(title=f"history of {op} ({history.path})", title_justify="left", header_style="bold")
    # energy and the SM clock only where some run measured them (--energy; NVML)
    energy = any(row.energy_mj is not None for _, found in series for _, row in found)
    clocks = any(row.sm_mhz_median is not None for _, found in series for _, row in found)
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
    for index, (key, found) in enumerate(series):
        if index:
            table.add_section()
        for position, ((run, row), pair) in enumerate(
            zip(found, _marks(found, value, {ALL} if allow_mismatch else ()))
        ):
            mark = pair if isinstance(pair, str) else verdict_text(pair)
            if isinstance(pair, Pair) and pair.mismatch:
                footnotes[describe(pair.mismatch)] = None
            verdict = pair if isinstance(pair, str) else pair.verdict.value
            style = {
                Verdict.SLOWER.value: "bold red",
                Verdict.FASTER.value: "green",
                Verdict.NOT_COMPARABLE.value: "yellow",
            }.get(verdict, "")
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
    err.print("commit*: the kernels folder had uncommitted changes", markup=False)
    if footnotes and allow_mismatch:
        err.print(
            f"verdict*: judged across runs whose fingerprints differ (--allow-mismatch): "
            f"{'; '.join(footnotes)}",
            soft_wrap=True,
            markup=False,
        )
    if plot is not None:
        _plot(series, plot, op)


def _plot(series: list[tuple[RowKey, list[tuple[RunInfo, ResultRow]]]], path: Path, op: str) -> None:
    from cudabench.present.plots import plot_history

    try:
        plot_history(series, path, op)
    except (OSError, ValueError) as exc:
        fail_usage(f"--plot {path}: {exc}")
    err.print(f"plot: {path.resolve()}", soft_wrap=True, markup=False)


def import_command(
    files: Annotated[
        list[Path],
        typer.Argument(help="Results files (.json, or the .csv beside one) to add to the history."),
    ],
    tag: Annotated[str, typer.Option(help="A tag for the imported runs.")] = "",
    db: DbOption = None,
) -> None:
    """Add older results files to the history database (each once: a file imported before
    is skipped). A file that is not a results file is one line; the others still import,
    and the command exits 2."""
    imported = skipped = rows_in = 0
    bad: list[str] = []
    with _open(db) as history:
        for path in files:
            source = str(path.with_suffix(".json").resolve())
            if history.imported(source) is not None:
                skipped += 1
                continue
            try:
                meta, rows = read_results(path)
            except ResultsError as exc:
                bad.append(str(exc))
                continue
            history.import_run(meta, rows, source, tag)
            imported += 1
            rows_in += len(rows)
    for line in bad:
        err.print(error_line(line), soft_wrap=True)
    err.print(
        f"imported {imported} run(s), {rows_in} row(s) into {history.path}"
        + (f"; {skipped} already there" if skipped else ""),
        soft_wrap=True,
        markup=False,
    )
    if bad:
        raise typer.Exit(2)
