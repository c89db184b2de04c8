"""`cudabench report`: one run as a table, Markdown, CSV, JSON or HTML, and plots."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from cudabench.cli.common import err, fail_usage, out
from cudabench.core.errors import ResultsError
from cudabench.core.records import command_kind
from cudabench.core.shapes import ShapeError, parse_shape, shape_text
from cudabench.present.reports import report_frame, report_html, report_markdown
from cudabench.present.tables import fingerprint_caption, results_table
from cudabench.record.results import results_document
from cudabench.record.stems import refuse_overwrite
from cudabench.usecases.compare_runs import load_run

FORMATS = ("table", "markdown", "csv", "json", "html")
SUFFIXES = {  # --output's suffix, the format it names
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
}


def _format_of(output: Path | None) -> str:
    """The format --output's suffix names (table without --output); bad usage otherwise."""
    if output is None:
        return "table"
    if output.is_dir():
        fail_usage(f"--output {output}: is a folder; name a file (e.g. report.md)")
    if output.suffix.lower() not in SUFFIXES:
        fail_usage(
            f"--output {output}: its suffix names no format: give --format markdown, csv, json or "
            "html (or end the name .md, .csv, .json or .html)"
        )
    return SUFFIXES[output.suffix.lower()]


def report_command(
    run: Annotated[
        Optional[Path],
        typer.Argument(help="Results file or folder (its newest run). Default: the newest run in results/."),
    ] = None,
    format: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            "-f",
            help=f"One of {', '.join(FORMATS)} (default: --output's suffix names it, .md .csv .json "
            ".html; else table).",
        ),
    ] = None,
    plot: Annotated[
        Optional[Path],
        typer.Option(
            help="Also draw bandwidth against size per variant, with the DRAM peak, and a bar "
            "chart of one shape's variants, to this image (.png, .svg, .pdf)."
        ),
    ] = None,
    roofline: Annotated[
        Optional[Path],
        typer.Option(
            help="Also draw the run on a roofline (FLOP/byte against GFLOP/s, a point a variant "
            "and shape; the theoretical roof dashed, the card's measured ceilings solid when the "
            "run kept them) to this image."
        ),
    ] = None,
    shape: Annotated[
        Optional[str],
        typer.Option(
            "--shape",
            "-s",
            help="The shape of --plot's bar chart, written as run's --shape (2^24, 442368x128; "
            "default: the largest).",
        ),
    ] = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="Write the report to this file instead of stdout (never over "
            "a results file unless --force).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="Let --output replace an existing results file.")] = False,
) -> None:
    """Show one run in the format asked, and draw its plots."""
    if format is None:
        format = _format_of(output)
    if format not in FORMATS:
        fail_usage(f"--format {format!r} is not one of {', '.join(FORMATS)}")
    if format == "table" and output:
        fail_usage("--output takes markdown, csv, json or html (--format table is for the terminal)")
    if shape is not None and plot is None:
        fail_usage("--shape picks the shape of --plot's bar chart: give it with --plot")
    try:
        bars = None if shape is None else shape_text(parse_shape(shape))
    except ShapeError as exc:
        fail_usage(str(exc))
    _, meta, rows = load_run(run)
    if command_kind(meta.command) == "verify":
        err.print(
            f"note: this run is verify's checks ({len(rows)} checks of {len({r.shape for r in rows})} "
            "shapes, untimed): its rows say OK or wrong, not how fast; `cudabench verify` gives "
            "their verdicts",
            soft_wrap=True,
            markup=False,
        )
    if output is not None:
        try:
            check_output(output, force)
        except ResultsError as exc:
            fail_usage(str(exc))
    label = "+".join(dict.fromkeys(r.op for r in rows)) or "run"
    if plot is not None:
        try:
            from cudabench.present.plots import plot_run

            shown = plot_run(rows, meta, plot, bars)
        except ValueError as exc:
            fail_usage(f"--plot: {exc}")
        err.print(f"plot: {plot} (bars: shape {shown})", markup=False, soft_wrap=True)
    if roofline is not None:
        try:
            from cudabench.present.plots import plot_roofline

            placed = plot_roofline(rows, meta, roofline)
        except ValueError as exc:
            fail_usage(f"--roofline: {exc}")
        err.print(f"roofline: {roofline} ({placed} points)", markup=False, soft_wrap=True)
    if format == "table":
        table = results_table(rows, meta, label)
        table.caption, table.caption_justify = fingerprint_caption(meta), "left"
        out.print(table)
        return
    render: dict[str, Callable[[], str]] = {
        "markdown": lambda: report_markdown(rows, meta, label),
        "csv": lambda: report_frame(rows).to_csv(index=False),
        "json": lambda: json.dumps(results_document(meta, rows), indent=1),
        "html": lambda: report_html(rows, meta, label, str(plot) if plot else None),
    }
    text = render[format]()
    if output:
        try:
            output.write_text(text)
        except OSError as exc:
            fail_usage(f"--output {output}: cannot write: {exc.strerror or exc}")
        err.print(f"report: {output}", markup=False, soft_wrap=True)
    else:
        print(text, end="")


def check_output(output: Path, force: bool) -> None:
    """Before any work: --output must be a file in an existing folder, and not an existing
    results file (the run being reported, or another) unless --force. ResultsError."""
    if output.is_dir():
        raise ResultsError(f"--output {output}: is a folder; name a file (e.g. report.md)")
    if not output.parent.is_dir():
        raise ResultsError(f"--output {output}: no such folder {output.parent}")
    refuse_overwrite([output], force, what="report")
