"""Compare's tables (rich renderables): A against B a row a line with its verdict, and a run's
speedup matrix. The records they show are record/compare.py's."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from cudabench.core.records import ResultRow, RunMeta
from cudabench.present.tables import number_text, title
from cudabench.record.fingerprint import describe

_VERDICT_STYLE = {
    "FASTER": "bold green",
    "SLOWER": "bold red",
    "SAME": "",
    "UNSURE": "yellow",
    "STATUS": "bold magenta",
    "NOT_COMPARABLE": "yellow",
    "ONLY_A": "dim",
    "ONLY_B": "dim",
}


def verdict_text(pair: Any) -> str:
    """A pair's verdict as shown (compare.Pair): `OK -> FAIL`, `NOT COMPARABLE: driver
    580.95 != 575.57`, `SLOWER*` for a verdict given across differing fingerprints."""
    if pair.verdict.value == "STATUS":
        return f"{pair.a.status.value} -> {pair.b.status.value}"
    if pair.verdict.value == "NOT_COMPARABLE":
        return f"NOT COMPARABLE: {describe(pair.mismatch)}"
    return str(pair.verdict.value) + ("*" if pair.marked else "")


def compare_table(
    pairs: list[Any], meta_a: RunMeta, meta_b: RunMeta, threshold: float, mismatch: list[Any] | None = None
) -> Table:
    """A vs B, one line per matched or unmatched row (compare.Pair); the caption says
    whether the runs' fingerprints agree (`mismatch`: fingerprint.differences)."""
    table = Table(
        title=f"A {meta_a.started} ({meta_a.device.name}, {meta_a.timing_mode})  vs  "
        f"B {meta_b.started} ({meta_b.device.name}, {meta_b.timing_mode}) | "
        f"threshold {100 * threshold:g}%, noise = 3 standard errors or the spread",
        title_justify="left",
        header_style="bold",
        caption_justify="left",
        caption=(
            f"fingerprints differ: {describe(mismatch)}"
            if mismatch
            else "fingerprints agree"
            if mismatch is not None
            else None
        ),
    )
    profiled = any(p.a and p.b and p.a.ncu and p.b.ncu for p in pairs)
    for name, justify in [
        ("op", "left"),
        ("shape", "left"),
        ("variant", "left"),
        ("A µs", "right"),
        ("B µs", "right"),
        ("A/B", "right"),
        ("change", "right"),
        ("±noise", "right"),
        ("verdict", "left"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    if profiled:  # both runs went through `cudabench profile`: ncu's view of the change
        for name in ("ncu A µs", "ncu B µs", "ncu change", "DRAM % A→B", "bound A→B"):
            table.add_column(name, justify="right")
    for pair in pairs:
        op, variant, shape = pair.key.op, pair.key.label, pair.key.shape
        a_text = _cell(pair.a)
        b_text = _cell(pair.b)
        verdict = verdict_text(pair)
        cells = [
            op,
            shape,
            variant,
            a_text,
            b_text,
            number_text(pair.ratio, ".3f"),
            "" if pair.change is None else f"{100 * pair.change:+.1f}%",
            "" if pair.noise is None else f"{100 * pair.noise:.1f}%",
            Text(verdict, style=_VERDICT_STYLE[pair.verdict.value]),
        ]
        if profiled:
            cells += _ncu_cells(pair.a.ncu if pair.a else None, pair.b.ncu if pair.b else None)
        table.add_row(*cells)
    return table


def _ncu_cells(a: Any, b: Any) -> list[str]:
    """ncu's duration, DRAM throughput and bound hint, A and B (ProfileMetrics or None)."""
    if a is None or b is None:
        return [
            number_text(a and a.duration_us, ",.1f"),
            number_text(b and b.duration_us, ",.1f"),
            "",
            "",
            "",
        ]
    change = f"{100 * (b.duration_us / a.duration_us - 1):+.1f}%" if a.duration_us else ""
    dram = f"{number_text(a.dram_pct, '.0f')}→{number_text(b.dram_pct, '.0f')}"
    bound = a.bound if a.bound == b.bound else f"{a.bound}→{b.bound}"
    return [number_text(a.duration_us, ",.1f"), number_text(b.duration_us, ",.1f"), change, dram, bound]


def _cell(row: ResultRow | None) -> str:
    if row is None:
        return "-"
    return number_text(row.time_us, ",.1f") if row.time_us else row.status.value


def matrix_table(matrix: Any, meta: RunMeta) -> Table:
    """Shapes x variants of speedups over `matrix.against` (compare.Matrix); best starred."""
    table = Table(
        title=f"speedup over {matrix.against} | {title(meta, 'run')}",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("shape")
    for name in matrix.variants:
        table.add_column(name, justify="right")
    for shape in matrix.shapes:
        cells = []
        for name in matrix.variants:
            value = matrix.speedup.get((shape, name))
            text = "-" if value is None else f"{value:.2f}×"
            cells.append(f"[bold]★ {text}[/]" if (shape, name) in matrix.best else text)
        table.add_row(shape, *cells)
    return table
