"""Plots (matplotlib, headless): of one run, bandwidth against problem size per variant with
the DRAM peak as a line (a roofline-style view of a memory-bound op) and a bar chart of one
shape's variants; of a tuning search, time over its parameters; of the history, cases over
runs. Labelled with units and the GPU, for a paper or a PR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cudabench.core.records import ResultRow, RunMeta, Status, parse_params
from cudabench.record.fingerprint import differences


def save(fig: Any, path: Path, close: bool = True) -> None:
    """Write the figure (its format from the suffix), creating the folder; closes it. A path
    that cannot be written is a ValueError with one line (the callers' usage error), not an
    OSError traceback."""
    import matplotlib.pyplot as plt

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder, not an image file")
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if close:
            plt.close(fig)


def plot_run(rows: list[ResultRow], meta: RunMeta, path: Path, shape: str | None = None) -> str:
    """Write the two-panel figure to `path` (the format from its suffix); returns the shape
    the bar chart shows. Raises ValueError when no row has a throughput to plot."""
    fig, shape = draw_run(rows, meta, shape)
    save(fig, path)
    return shape


def draw_run(rows: list[ResultRow], meta: RunMeta, shape: str | None = None) -> tuple[Any, str]:
    """The figure (left: GB/s against bytes moved per variant, DRAM peak line; right: one
    shape's variants as bars) and the shape of the bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in rows if r.status is Status.OK and r.gbps and r.bytes_moved]
    if not timed:
        raise ValueError("no correct, timed row to plot")
    shapes = list(dict.fromkeys(r.shape for r in timed))
    if shape is None:  # the largest problem, where bandwidth means the most
        shape = max(shapes, key=lambda s: max(r.bytes_moved or 0 for r in timed if r.shape == s))
    elif shape not in shapes:
        raise ValueError(f"no timed row at shape {shape!r} (shapes: {', '.join(shapes)})")

    with_energy = any(r.energy_mj for r in timed if r.shape == shape)  # a third panel
    fig, axes = plt.subplots(
        1, 3 if with_energy else 2, figsize=(19 if with_energy else 13, 5), constrained_layout=True
    )
    left, right = axes[0], axes[1]
    peak = meta.device.dram_peak_gbps
    for index, name in enumerate(dict.fromkeys(r.label for r in timed)):
        mine = [r for r in timed if r.label == name]
        color = f"C{index % 10}"
        style = "--" if any(r.is_baseline for r in mine) else "-"
        line = sorted((r.bytes_moved, r.gbps) for r in mine if "x" not in r.shape)  # 1-D: a line
        squares = [(r.bytes_moved, r.gbps) for r in mine if "x" in r.shape]  # 2-D shapes
        left.plot([p[0] for p in line], [p[1] for p in line], style, marker="o", color=color, label=name)
        left.scatter([p[0] for p in squares], [p[1] for p in squares], marker="s", color=color)
    left.axhline(peak, color="black", linewidth=1)
    left.annotate(
        f"DRAM peak {peak:,.0f} GB/s",
        (0.01, peak),
        xycoords=("axes fraction", "data"),
        va="bottom",
        fontsize=9,
    )
    left.set_xscale("log")
    left.set_xlabel("bytes moved per launch (lines: 1-D shapes, squares: row shapes)")
    left.set_ylabel("effective bandwidth (GB/s)")
    left.set_title("bandwidth against problem size")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=9)

    bars = [r for r in timed if r.shape == shape]
    right.bar(
        [r.label for r in bars],
        [r.gbps for r in bars],
        color=["0.6" if r.is_baseline else "C0" for r in bars],
    )
    right.axhline(peak, color="black", linewidth=1)
    right.set_ylabel("effective bandwidth (GB/s)")
    right.set_title(f"shape {shape}: variants")
    right.tick_params(axis="x", rotation=30)
    for index, row in enumerate(bars):
        right.annotate(f"{row.time_us:,.1f} µs", (index, row.gbps), ha="center", va="bottom", fontsize=8)
    if with_energy:
        draw_energy(axes[2], bars, shape)
    fig.suptitle(f"{rows[0].op} on {meta.device.name} ({meta.timing_mode} L2, {meta.started[:10]})")
    return fig, shape


def draw_energy(ax: Any, bars: list[ResultRow], shape: str) -> None:
    """Time and energy per call of one shape's variants, side by side (two y axes)."""
    xs = range(len(bars))
    width = 0.4
    ax.bar([x - width / 2 for x in xs], [r.time_us or 0 for r in bars], width, color="C0", label="time (µs)")
    ax.set_ylabel("time per call (µs)", color="C0")
    joules = ax.twinx()
    joules.bar(
        [x + width / 2 for x in xs], [r.energy_mj or 0 for r in bars], width, color="C3", label="energy (mJ)"
    )
    joules.set_ylabel("energy per call (mJ, back-to-back calls)", color="C3")
    ax.set_xticks(list(xs), [r.label for r in bars], rotation=30)
    ax.set_title(f"shape {shape}: time and energy per call")


def roofline_points(rows: list[ResultRow]) -> tuple[list[tuple[ResultRow, float, float]], list[str]]:
    """(row, FLOP/byte, GFLOP/s) of every correct timed row whose op does arithmetic, and the
    labels of those that do none (a copy or a transpose has no place on a roofline)."""
    from cudabench.core.names import UnknownName
    from cudabench.ops.registry import get_op

    points, none = [], []
    for r in rows:
        if r.status is not Status.OK or not r.time_us or not r.bytes_moved:
            continue
        try:
            op = get_op(r.op)
        except UnknownName:
            continue
        flops = op.arithmetic(tuple(int(d) for d in r.shape.split("x")))
        if not flops:
            none.append(f"{r.op} {r.label}")
            continue
        points.append((r, flops / r.bytes_moved, flops / (r.time_us * 1e-6) / 1e9))
    return points, list(dict.fromkeys(none))


def plot_roofline(rows: list[ResultRow], meta: RunMeta, path: Path) -> int:
    """A roofline (log-log): arithmetic intensity (FLOP per byte that must move) against
    GFLOP/s, one point a (variant, shape); the theoretical roof dashed (DRAM peak, fp32
    peak), the measured ones solid when the run kept its card's ceilings (read and copy
    mixes, FMA). Returns the points drawn; ValueError when there is none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    points, none = roofline_points(rows)
    if not points:
        raise ValueError("no correct, timed row of an op that does arithmetic to place")
    d, c = meta.device, meta.ceilings
    fig, ax = plt.subplots(figsize=(11, 6), constrained_layout=True)
    lo = min(p[1] for p in points) / 4
    hi = max(max(p[1] for p in points) * 4, 4 * d.fp32_peak_gflops / d.dram_peak_gbps)
    x = np.geomspace(lo, hi, 200)
    ax.plot(
        x,
        np.minimum(x * d.dram_peak_gbps, d.fp32_peak_gflops),
        "--",
        color="black",
        label=f"theoretical: DRAM {d.dram_peak_gbps:,.0f} GB/s, fp32 {d.fp32_peak_gflops:,.0f} GFLOP/s",
    )
    if c is not None:
        top = c.fma_gflops or d.fp32_peak_gflops
        for mix, gbps, color in (("read", c.read_gbps, "C3"), ("copy", c.copy_gbps, "C1")):
            ax.plot(
                x,
                np.minimum(x * gbps, top),
                "-",
                color=color,
                label=f"measured: {mix} {gbps:,.0f} GB/s, FMA {top:,.0f} GFLOP/s",
            )
    ops = list(dict.fromkeys(r.op for r, _, _ in points))  # a colour an op
    for index, op in enumerate(ops):
        for library in (False, True):
            mine = [p for p in points if p[0].op == op and p[0].is_baseline == library]
            if mine:
                ax.scatter(
                    [p[1] for p in mine],
                    [p[2] for p in mine],
                    zorder=3,
                    color=f"C{(index + 4) % 10}",
                    marker="x" if library else "o",
                    label=f"{op} ({'libraries' if library else 'variants'})",
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte that must move)")
    ax.set_ylabel("GFLOP/s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(
        f"roofline on {d.name} ({meta.timing_mode} L2, {meta.started[:10]}), a point a (variant, shape)",
        fontsize=9,
    )
    if none:
        skipped = sorted({name.split(" ")[0] for name in none})
        fig.text(0.01, 0.005, f"not placed (no arithmetic): {', '.join(skipped)}", fontsize=7)
    save(fig, path)
    return len(points)


def plot_tuning(rows: list[ResultRow], names: tuple[str, ...], path: Path, title: str) -> str:
    """A tuning search's figure: time as a heat map over the two parameters with the most
    measured values (each cell the best time over the other parameters), or time against
    the only varying parameter. Writes `path`; returns what it drew. ValueError when no
    configuration was timed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    timed = [
        (parse_params(r.params), r.time_us)
        for r in rows
        if r.status is Status.OK and r.time_us and r.params and not r.is_baseline
    ]
    if not timed:
        raise ValueError("no correct, timed configuration to plot")
    counts = {n: len({c[n] for c, _ in timed if n in c}) for n in names}
    varying = sorted((n for n in names if counts.get(n, 0) > 1), key=lambda n: -counts[n])
    fig, ax = plt.subplots(figsize=(7, 4.8))
    if len(varying) >= 2:
        x_name, y_name = varying[1], varying[0]
        xs = sorted({c[x_name] for c, _ in timed})
        ys = sorted({c[y_name] for c, _ in timed})
        grid = np.full((len(ys), len(xs)), np.nan)
        for config, t in timed:
            i, j = ys.index(config[y_name]), xs.index(config[x_name])
            grid[i, j] = t if np.isnan(grid[i, j]) else min(grid[i, j], t)
        image = ax.imshow(grid, cmap="viridis_r", aspect="auto", origin="lower")
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
        ax.set_yticks(range(len(ys)), [str(v) for v in ys])
        ax.set_xlabel(x_name)
        ax.set_ylabel(y_name)
        for i in range(len(ys)):
            for j in range(len(xs)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=7, color="white")
        fig.colorbar(image, ax=ax, label="best time µs (other parameters free)")
        drew = f"heat map of {y_name} x {x_name}"
    else:
        name = varying[0] if varying else names[0]
        best: dict[int, float] = {}
        for config, t in timed:
            best[config[name]] = min(best.get(config[name], t), t)
        keys = sorted(best)
        ax.plot([str(k) for k in keys], [best[k] for k in keys], marker="o")
        ax.set_xlabel(name)
        ax.set_ylabel("time µs (median)")
        ax.grid(alpha=0.3)
        drew = f"time against {name}"
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, path)
    return drew


def plot_history(series: list[tuple[Any, list[tuple[Any, ResultRow]]]], path: Path, op: str) -> None:
    """Cases over runs (`cudabench history --plot`): each case's correct, timed rows as
    medians with their p10-p90 spread, on one axis of the runs' ids and commits in order.
    `series` is [(RowKey, [(RunInfo, row), ...]), ...], each oldest first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {run.id: run for _, found in series for run, _ in found}
    order = sorted(runs, key=lambda i: (runs[i].started, i))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for key, found in series:
        timed = [(run, row) for run, row in found if row.status is Status.OK and row.time_us]
        if timed:
            ax.errorbar(
                [order.index(run.id) for run, _ in timed],
                [row.time_us or 0.0 for _, row in timed],
                yerr=[(row.spread or 0) * (row.time_us or 0) / 2 for _, row in timed],
                marker="o",
                capsize=3,
                label=f"{key.label} {key.shape} {key.dtype}",
            )
    # a dotted line where the fingerprint changed: the runs either side are NOT COMPARABLE
    changed = [
        x
        for x in range(1, len(order))
        if differences(runs[order[x - 1]].fingerprint, runs[order[x]].fingerprint)
    ]
    for n, x in enumerate(changed):
        ax.axvline(
            x - 0.5, color="grey", linestyle=":", linewidth=1, label=None if n else "fingerprint changed"
        )
    ax.set_xticks(range(len(order)), [f"{i}\n{runs[i].git_sha[:7]}" for i in order], fontsize=7)
    ax.set_xlabel("run (id, commit)")
    ax.set_ylabel("median time µs (bars: p10-p90 spread)")
    ax.set_title(f"{op} over time on {series[0][1][-1][0].gpu}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    try:
        save(fig, path, close=False)
    finally:
        plt.close(fig)
