"""Result tables for the terminal (rich renderables; printing is the CLI's job)."""

from __future__ import annotations

from collections import defaultdict

from rich.table import Table
from rich.text import Text

from cudabench.spec import ResultRow, RunMeta, Status

_STATUS_STYLE = {
    Status.OK: "green", Status.FAIL: "bold red", Status.COMPILE_ERROR: "bold red",
    Status.CRASH: "bold red", Status.ERROR: "bold red", Status.N_A: "dim", Status.SKIPPED: "yellow",
}  # fmt: skip


def _num(value: float | None, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def fastest_per_shape(rows: list[ResultRow]) -> set[tuple[str, str, str]]:
    """(op, shape, variant) of the fastest correct non-baseline row of each shape."""
    best: dict[tuple[str, str], ResultRow] = {}
    for row in rows:
        if row.status is Status.OK and row.time_us and not row.is_baseline:
            key = (row.op, row.shape)
            if key not in best or row.time_us < best[key].time_us:
                best[key] = row
    return {(r.op, r.shape, r.variant) for r in best.values()}


def title(meta: RunMeta, op_label: str) -> str:
    d = meta.device
    return (
        f"{op_label} on {d.name} (sm_{d.compute_capability.replace('.', '')}, "
        f"{d.sm_count} SMs, DRAM peak {d.dram_peak_gbps:,.0f} GB/s) | "
        f"{meta.timing_mode} L2 | median of samples"
    )


def results_table(rows: list[ResultRow], meta: RunMeta, op_label: str) -> Table:
    """One line per row; the fastest correct variant of each shape in bold with a star."""
    best = fastest_per_shape(rows)
    baseline_names = sorted({r.variant for r in rows if r.is_baseline})
    vs = f"vs {baseline_names[0]}" if baseline_names else "speedup"
    table = Table(title=title(meta, op_label), title_justify="left", header_style="bold")
    for name, justify in [
        ("shape", "left"), ("variant", "left"), ("status", "left"), ("time µs", "right"),
        ("±spread", "right"), ("GB/s", "right"), ("% peak", "right"), (vs, "right"),
        ("regs", "right"), ("timing", "left"),
    ]:  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    groups: dict[tuple[str, str], list[ResultRow]] = defaultdict(list)
    for row in rows:
        groups[(row.op, row.shape)].append(row)
    for gi, ((op, shape), group) in enumerate(groups.items()):
        if gi:
            table.add_section()
        for position, row in enumerate(group):
            star = (row.op, row.shape, row.variant) in best
            style = "bold" if star else ("dim" if row.is_baseline else "")
            status = Text(row.status.value, style=_STATUS_STYLE[row.status])
            if row.error and row.status is not Status.OK:
                status.append(f" {_short(row.error)}", style="dim")
            timing = f"{row.method} x{row.batch}" if row.method else ""
            table.add_row(
                shape if position == 0 else "", ("★ " if star else "  ") + row.variant, status,
                _num(row.time_us, ",.1f"), _num(row.spread and 100 * row.spread, ".1f") + ("%" if row.spread is not None else ""),
                _num(row.gbps, ",.0f"), _num(row.pct_peak, ".1f"),
                _num(row.speedup, ".2f") + ("×" if row.speedup else ""),
                _num(row.registers, "d"), timing, style=style,
            )  # fmt: skip
    return table


def _short(error: str, limit: int = 70) -> str:
    first = error.strip().splitlines()[0] if error.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def failure_summary(rows: list[ResultRow]) -> list[str]:
    """One line per failed row: `reduce 1000003 mykernel: FAIL (...)`."""
    return [
        f"{r.op} {r.shape} {r.variant}: {r.status.value} ({_short(r.error, 120)})"
        for r in rows
        if r.status.is_failure
    ]
