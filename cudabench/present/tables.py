"""Result tables (rich renderables; printing is the CLI's job), compare and matrix tables,
and a run's report as Markdown or HTML."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from cudabench.core.records import (
    Ceilings,
    DeviceInfo,
    ResultRow,
    RunMeta,
    Status,
    parse_params,
)
from cudabench.execution.ncu import COLD_L2_HIT_PCT
from cudabench.record.ceilings import MIX_OPS, MIXES, mix_of
from cudabench.record.fingerprint import describe, fingerprint, short_line
from cudabench.record.results import case_labels, fastest_per_shape

if TYPE_CHECKING:  # pandas is imported where a frame is made (0.4 s a command's start)
    import pandas as pd

_STATUS_STYLE = {
    Status.OK: "green",
    Status.FAIL: "bold red",
    Status.COMPILE_ERROR: "bold red",
    Status.CRASH: "bold red",
    Status.TIMEOUT: "bold red",
    Status.ERROR: "bold red",
    Status.N_A: "dim",
    Status.SKIPPED: "yellow",
}


def _num(value: float | None, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def short_labels(rows: list[ResultRow]) -> list[str]:
    """Each row's variant with only the parameters that differ among the rows of that
    variant in this table (nvbench shows the axes that vary): a plain run reads `float4`, a
    `--param BLOCK=128,256` run `float4[BLOCK=128]`. Files keep every parameter."""
    seen: dict[tuple[str, str], list[dict[str, int]]] = defaultdict(list)
    parsed = []
    for row in rows:
        values = parse_params(row.params)
        parsed.append(values)
        seen[(row.op, row.variant)].append(values)
    labels = []
    for row, values in zip(rows, parsed):
        group = seen[(row.op, row.variant)]
        varying = [n for n in values if len({g.get(n) for g in group}) > 1]
        shown = ",".join(f"{n}={values[n]}" for n in varying)
        labels.append(f"{row.variant}[{shown}]" if shown else row.variant)
    return labels


CLOCK_NAMES = {"cupti": "kernel clock (CUPTI records)", "events": "CUDA events"}


def clock_label(rows: list[ResultRow]) -> str:
    """Which clocks timed the rows: `kernel clock (CUPTI records)`, `CUDA events`, or both
    names when a file mixes them."""
    timers = sorted({r.timer for r in rows if r.time_us is not None}) or ["events"]
    return " + ".join(CLOCK_NAMES.get(t, t) for t in timers)


def title(meta: RunMeta, op_label: str, rows: list[ResultRow] | None = None) -> str:
    d = meta.device
    return (
        f"{op_label} on {d.name} (sm_{d.compute_capability.replace('.', '')}, "
        f"{d.sm_count} SMs, DRAM peak {d.dram_peak_gbps:,.0f} GB/s, "
        f"fp32 peak {d.fp32_peak_gflops:,.0f} GFLOP/s) | "
        f"{meta.timing_mode} L2{', interleaved' if meta.timing.interleave else ''} | "
        f"{clock_label(rows or [])}, median of samples"
    )


def fingerprint_caption(meta: RunMeta) -> str:
    """The run's fingerprint on one line (what compare and history match runs by)."""
    return f"fingerprint: {short_line(fingerprint(meta))}"


def speedup_label(rows: list[ResultRow]) -> str:
    """The speedup column's heading: the library each case's speedups are over (the first of
    its baselines that timed, as sweep.with_speedups takes it), `vs library` when cases used
    different ones (a baseline that failed in one dtype), `speedup` when none timed."""
    used: dict[tuple[str, str, str], str] = {}
    for r in rows:
        if r.is_baseline and r.time_us:
            used.setdefault((r.op, r.shape, r.dtype), r.variant)
    names = set(used.values())
    if not names:
        return "speedup"
    return f"vs {names.pop()}" if len(names) == 1 else "vs library"


def results_table(rows: list[ResultRow], meta: RunMeta, op_label: str) -> Table:
    """One line per row; the fastest correct variant of each shape in bold with a star."""
    best = fastest_per_shape(rows)
    vs = speedup_label(rows)
    table = Table(title=title(meta, op_label, rows), title_justify="left", header_style="bold")
    flops = any(r.gflops for r in rows)  # a compute-bound op: % peak is of the fp32 peak
    # --timer both: the events clock's own time (measured just before), and how much more it says
    both = meta.timing.timer == "both"
    ceiling = any(r.pct_ceiling is not None for r in rows)  # of what this card can move
    # energy per call, average power and work per joule: only where the card measured them
    energy = any(r.energy_mj is not None for r in rows)
    per_joule = "GFLOP/J" if flops else "GB/J"
    # accuracy: the worst |err| over that of the reference's formula evaluated in float32
    accuracy = any(r.err_vs_f32 is not None for r in rows)
    for name, justify in [
        ("shape", "left"),
        ("variant", "left"),
        ("status", "left"),
        ("time µs", "right"),
        *([("events µs", "right"), ("Δ events", "right")] if both else []),
        ("±spread", "right"),
        ("GB/s", "right"),
        *([("GFLOP/s", "right")] if flops else []),
        ("% peak", "right"),
        *([("% ceiling", "right")] if ceiling else []),
        *([("mJ", "right"), ("W", "right"), (per_joule, "right")] if energy else []),
        (vs, "right"),
        *([("err ×f32", "right")] if accuracy else []),
        ("regs", "right"),
        ("timing", "left"),
    ]:
        # a narrow terminal cuts a long variant label short (…) rather than wrapping it: the
        # best row's label would wrap at the space after its star, leaving its numbers a line
        # apart from their name
        table.add_column(name, justify=justify, no_wrap=name == "variant")  # type: ignore[arg-type]
    groups: dict[tuple[str, str], list[tuple[ResultRow, str]]] = defaultdict(list)
    for row, label, name in zip(rows, case_labels(rows), short_labels(rows)):
        groups[(row.op, label)].append((row, name))
    for gi, ((_, shape), group) in enumerate(groups.items()):
        if gi:
            table.add_section()
        for position, (row, name) in enumerate(group):
            star = row.key in best
            style = "bold" if star else ("dim" if row.is_baseline else "")
            status = Text(row.status.value, style=_STATUS_STYLE[row.status])
            if row.error and row.status is not Status.OK:
                status.append(f" {_short(row.error)}", style="dim")
            if row.notes:
                status.append(f" ⚠ {_short(row.notes, 40)}", style="yellow")
            timing = f"{row.method} x{row.batch}" if row.method else ""
            events = [_num(row.events_us, ",.1f"), _delta(row.events_us, row.time_us)]
            table.add_row(
                shape if position == 0 else "",
                ("★ " if star else "  ") + name,
                status,
                _num(row.time_us, ",.1f"),
                *(events if both else []),
                _num(row.spread and 100 * row.spread, ".1f") + ("%" if row.spread is not None else ""),
                _num(row.gbps, ",.0f"),
                *([_num(row.gflops, ",.0f")] if flops else []),
                _num(row.pct_peak, ".1f"),
                *([_num(row.pct_ceiling, ".1f")] if ceiling else []),
                *(
                    [
                        _num(row.energy_mj, ",.3f"),
                        _num(row.power_w, ",.0f"),
                        _num(row.gflop_per_j if flops else row.gb_per_j, ",.1f"),
                    ]
                    if energy
                    else []
                ),
                _num(row.speedup, ".2f") + ("×" if row.speedup else ""),
                *([_num(row.err_vs_f32, ".3g")] if accuracy else []),
                _num(row.registers, "d"),
                timing,
                style=style,
            )
    return table


def profile_table(rows: list[ResultRow], meta: RunMeta, op_label: str) -> Table:
    """cudabench's time beside Nsight Compute's metrics, one line per row."""
    table = Table(
        title=f"{title(meta, op_label, rows)} | Nsight Compute, one launch a row, clocks not locked",
        title_justify="left",
        header_style="bold",
    )
    # cold profiles: the L2 hit rate of the launch's reads (⚠: more than a cold L2 explains)
    l2 = any(r.ncu is not None and r.ncu.l2_hit_pct is not None for r in rows)
    for name in [
        "shape",
        "variant",
        "status",
        "time µs",
        "ncu µs",
        "Δ",
        "DRAM %",
        "mem %",
        "SM %",
        "occ %",
        "regs",
        "smem B",
        "DRAM rd MB",
        "wr MB",
        *(["L2 hit %"] if l2 else []),
        "bound",
    ]:
        table.add_column(name, justify="left" if name in ("shape", "variant", "status", "bound") else "right")
    previous = None
    for row in rows:
        if previous is not None and (row.op, row.shape) != previous:
            table.add_section()
        shape = row.shape if (row.op, row.shape) != previous else ""
        previous = (row.op, row.shape)
        status = Text(row.status.value, style=_STATUS_STYLE[row.status])
        if row.error and row.status is not Status.OK:
            status.append(f" {_short(row.error, 40)}", style="dim")
        if row.notes:
            status.append(f" ⚠ {_short(row.notes, 40)}", style="yellow")
        n = row.ncu
        if n is None:
            table.add_row(shape, row.label, status, _num(row.time_us, ",.1f"))
            continue
        diff = _delta(row.time_us, n.duration_us)
        occupancy = ""
        if n.achieved_occupancy_pct is not None:
            occupancy = f"{n.achieved_occupancy_pct:.0f}/{_num(n.theoretical_occupancy_pct, '.0f')}"
        hot_hit = meta.timing_mode == "cold" and (n.l2_hit_pct or 0) > COLD_L2_HIT_PCT
        hit = _num(n.l2_hit_pct, ".0f") + (" ⚠" if hot_hit else "")
        table.add_row(
            shape,
            row.label,
            status,
            _num(row.time_us, ",.1f"),
            _num(n.duration_us, ",.1f"),
            diff,
            _num(n.dram_pct, ".1f"),
            _num(n.memory_pct, ".1f"),
            _num(n.sm_pct, ".1f"),
            occupancy,
            _num(n.registers, "d"),
            _num(n.shared_mem_bytes, ",d"),
            _megabytes(n.dram_read_bytes),
            _megabytes(n.dram_write_bytes),
            *([hit] if l2 else []),
            n.bound,
        )
    return table


def ceilings_table(c: Ceilings, device: DeviceInfo, rows: list[ResultRow] | None = None) -> Table:
    """What the card can move in each mix and compute, against its theoretical peaks, and the
    row that set each ceiling; with the measurement's rows, the best kernel and the best
    library reference of each mix beside (of any op that moves the mix: ceilings.mix_of)."""
    kept = "" if rows else f" | kept from {c.measured} (--recalibrate measures again)"
    table = Table(
        title=f"ceilings of {c.gpu} (driver {c.driver}, memory {c.memory_clock_mhz:g} "
        f"MHz, DRAM peak {device.dram_peak_gbps:,.0f} GB/s, fp32 peak "
        f"{device.fp32_peak_gflops:,.0f} GFLOP/s){kept}",
        title_justify="left",
        header_style="bold",
    )
    for name in [
        "ceiling",
        "reads",
        "rate",
        "% peak",
        "set by",
        "best variant",
        "its rate",
        "reference",
        "its rate",
    ]:
        table.add_column(
            name, justify="left" if name in ("ceiling", "set by", "best variant", "reference") else "right"
        )
    set_by = dict(line.split(": ", 1) for line in c.by if ": " in line)  # mix -> "op label"
    for mix, op in [*MIX_OPS.items(), ("fma", "fma")]:
        rate = c.fma_gflops if mix == "fma" else getattr(c, f"{mix}_gbps")
        if rate is None:
            continue
        peak = device.fp32_peak_gflops if mix == "fma" else device.dram_peak_gbps
        unit = "GFLOP/s" if mix == "fma" else "GB/s"
        mine = [
            r
            for r in rows or []
            if r.status is Status.OK and (r.op == op if mix == "fma" else mix_of(r, device) == mix)
        ]

        def value(r: ResultRow, fma: bool = mix == "fma") -> float | None:
            return r.gflops if fma else r.gbps

        best = [
            max((r for r in mine if r.is_baseline == library), key=lambda r: value(r) or 0.0, default=None)
            for library in (False, True)
        ]
        cells = [cell for r in best for cell in ((_named(r, op), _num(value(r), ",.0f")) if r else ("", ""))]
        table.add_row(
            mix,
            "" if mix == "fma" else f"{MIXES[mix]:.2f}",
            f"{rate:,.0f} {unit}",
            f"{100 * rate / peak:.1f}",
            set_by.get(mix, "").removeprefix(f"{op} "),
            *cells,
        )
    if c.floor_us is not None:
        table.add_row("launch floor", "", f"{c.floor_us:.1f} µs", "", "empty kernel", "", "", "", "")
    return table


def _named(row: ResultRow, op: str) -> str:
    """A variant (or library) beside its mix's op: its label, with its op when another."""
    name = row.variant if row.is_baseline else row.label
    return name if row.op == op else f"{row.op} {name}"


def _delta(value: float | None, reference: float | None) -> str:
    """`+7%`: how much `value` says more than `reference`."""
    if not value or not reference:
        return ""
    return f"{100 * (value / reference - 1):+.0f}%"


def _short(error: str, limit: int = 70) -> str:
    first = error.strip().splitlines()[0] if error.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def failure_summary(rows: list[ResultRow], baselines: bool = False) -> list[str]:
    """One line per failed kernel row (`reduce 1000003 float32 mykernel: FAIL (...)`), or
    with `baselines` per failed library row."""
    return [
        f"{r.op} {r.shape} {r.dtype} {r.label}: {r.status.value} ({_short(r.error, 120)})"
        for r in rows
        if r.status.is_failure and r.is_baseline == baselines
    ]


# ---------------------------------------------------------------- compare and exports

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
            _num(pair.ratio, ".3f"),
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
        return [_num(a and a.duration_us, ",.1f"), _num(b and b.duration_us, ",.1f"), "", "", ""]
    change = f"{100 * (b.duration_us / a.duration_us - 1):+.1f}%" if a.duration_us else ""
    dram = f"{_num(a.dram_pct, '.0f')}→{_num(b.dram_pct, '.0f')}"
    bound = a.bound if a.bound == b.bound else f"{a.bound}→{b.bound}"
    return [_num(a.duration_us, ",.1f"), _num(b.duration_us, ",.1f"), change, dram, bound]


def _cell(row: ResultRow | None) -> str:
    if row is None:
        return "-"
    return _num(row.time_us, ",.1f") if row.time_us else row.status.value


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
    frame["error"] = frame["error"].map(lambda e: _short(str(e), 60).replace("|", "/"))
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


def _megabytes(count: float | None) -> str:
    """A byte count in MB, blank when unknown."""
    return _num(None if count is None else count / 1e6, ",.1f")
