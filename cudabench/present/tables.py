"""A run's tables: results, profile and ceilings (rich renderables; printing is the CLI's
job), the failure lines, and the cell helpers the other tables share. Compare and matrix
tables: compare_tables.py; a run's report as Markdown or HTML: reports.py."""

from __future__ import annotations

from collections import defaultdict

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
from cudabench.record.fingerprint import fingerprint, short_line
from cudabench.record.results import case_labels, fastest_per_shape

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


def number_text(value: float | None, fmt: str) -> str:
    """`value` in `fmt`, blank when unknown."""
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
                status.append(f" {first_line(row.error)}", style="dim")
            if row.notes:
                status.append(f" ⚠ {first_line(row.notes, 40)}", style="yellow")
            timing = f"{row.method} x{row.batch}" if row.method else ""
            events = [number_text(row.events_us, ",.1f"), _delta(row.events_us, row.time_us)]
            table.add_row(
                shape if position == 0 else "",
                ("★ " if star else "  ") + name,
                status,
                number_text(row.time_us, ",.1f"),
                *(events if both else []),
                number_text(row.spread and 100 * row.spread, ".1f") + ("%" if row.spread is not None else ""),
                number_text(row.gbps, ",.0f"),
                *([number_text(row.gflops, ",.0f")] if flops else []),
                number_text(row.pct_peak, ".1f"),
                *([number_text(row.pct_ceiling, ".1f")] if ceiling else []),
                *(
                    [
                        number_text(row.energy_mj, ",.3f"),
                        number_text(row.power_w, ",.0f"),
                        number_text(row.gflop_per_j if flops else row.gb_per_j, ",.1f"),
                    ]
                    if energy
                    else []
                ),
                number_text(row.speedup, ".2f") + ("×" if row.speedup else ""),
                *([number_text(row.err_vs_f32, ".3g")] if accuracy else []),
                number_text(row.registers, "d"),
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
            status.append(f" {first_line(row.error, 40)}", style="dim")
        if row.notes:
            status.append(f" ⚠ {first_line(row.notes, 40)}", style="yellow")
        n = row.ncu
        if n is None:
            table.add_row(shape, row.label, status, number_text(row.time_us, ",.1f"))
            continue
        diff = _delta(row.time_us, n.duration_us)
        occupancy = ""
        if n.achieved_occupancy_pct is not None:
            occupancy = f"{n.achieved_occupancy_pct:.0f}/{number_text(n.theoretical_occupancy_pct, '.0f')}"
        hot_hit = meta.timing_mode == "cold" and (n.l2_hit_pct or 0) > COLD_L2_HIT_PCT
        hit = number_text(n.l2_hit_pct, ".0f") + (" ⚠" if hot_hit else "")
        table.add_row(
            shape,
            row.label,
            status,
            number_text(row.time_us, ",.1f"),
            number_text(n.duration_us, ",.1f"),
            diff,
            number_text(n.dram_pct, ".1f"),
            number_text(n.memory_pct, ".1f"),
            number_text(n.sm_pct, ".1f"),
            occupancy,
            number_text(n.registers, "d"),
            number_text(n.shared_mem_bytes, ",d"),
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
        cells = [
            cell for r in best for cell in ((_named(r, op), number_text(value(r), ",.0f")) if r else ("", ""))
        ]
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


def first_line(error: str, limit: int = 70) -> str:
    """The first line of `error`, cut to `limit` characters with an ellipsis."""
    first = error.strip().splitlines()[0] if error.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def failure_summary(rows: list[ResultRow], baselines: bool = False) -> list[str]:
    """One line per failed kernel row (`reduce 1000003 float32 mykernel: FAIL (...)`), or
    with `baselines` per failed library row."""
    return [
        f"{r.op} {r.shape} {r.dtype} {r.label}: {r.status.value} ({first_line(r.error, 120)})"
        for r in rows
        if r.status.is_failure and r.is_baseline == baselines
    ]


def _megabytes(count: float | None) -> str:
    """A byte count in MB, blank when unknown."""
    return number_text(None if count is None else count / 1e6, ",.1f")
