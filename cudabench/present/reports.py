"""A run's report as Markdown (a PR's comment) or one HTML page, over a frame of the columns
a reader needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudabench.core.records import ResultRow, RunMeta
from cudabench.present.tables import fingerprint_caption, first_line, title
from cudabench.record.results import fastest_per_shape

if TYPE_CHECKING:  # pandas is imported where a frame is made (0.4 s a command's start)
    import pandas as pd

REPORT_COLUMNS = [
    "op",
    "shape",
    "dtype",
    "variant",
    "status",
    "time_us",
    "spread",
    "gbps",
    "pct_peak",
    "speedup",
    "registers",
    "method",
    "batch",
    "error",
    "notes",
]


def report_frame(rows: list[ResultRow]) -> pd.DataFrame:
    """The columns a report shows, rounded for reading."""
    from cudabench.record.results import rows_frame

    frame = rows_frame(rows)[REPORT_COLUMNS].copy()
    frame["spread"] = (100 * frame["spread"]).round(2)
    frame = frame.rename(
        columns={"time_us": "time µs", "spread": "spread %", "gbps": "GB/s", "pct_peak": "% peak"}
    )
    return frame.round(3)


def _blanks(frame: pd.DataFrame) -> pd.DataFrame:
    """Missing values as empty cells, for text reports (integer columns too)."""
    return frame.astype(object).where(frame.notna(), "")


def report_markdown(rows: list[ResultRow], meta: RunMeta, op_label: str) -> str:
    """A Markdown table that pastes cleanly into a PR, under a line naming GPU and mode."""
    frame = _blanks(report_frame(rows))
    frame["error"] = frame["error"].map(lambda e: first_line(str(e), 60).replace("|", "/"))
    best = fastest_per_shape(rows)
    frame["variant"] = [f"**{r.label}**" if r.key in best else r.label for r in rows]
    head = (
        f"**{title(meta, op_label, rows)}**  \n`{meta.command}` ({meta.started}, "
        f"cudabench {meta.cudabench_version})  \n{fingerprint_caption(meta)}\n\n"
    )
    return head + str(frame.to_markdown(index=False)) + "\n"


def report_html(rows: list[ResultRow], meta: RunMeta, op_label: str, plot: str | None) -> str:
    """One self-contained page: title, the table, and the plot if one was made."""
    import html

    body = _blanks(report_frame(rows)).to_html(index=False, border=0, classes="results")
    image = f'<p><img src="{html.escape(plot)}" alt="bandwidth plot"></p>' if plot else ""
    return (
        "<!doctype html><meta charset='utf-8'>"
        f"<title>{html.escape(op_label)} - cudabench</title>"
        "<style>body{font-family:sans-serif}table.results{border-collapse:collapse}"
        "table.results td,table.results th{padding:2px 8px;text-align:right}</style>"
        f"<h2>{html.escape(title(meta, op_label, rows))}</h2>"
        f"<p><code>{html.escape(meta.command)}</code> ({html.escape(meta.started)})</p>"
        f"<p>{html.escape(fingerprint_caption(meta))}</p>"
        f"{body}{image}\n"
    )
