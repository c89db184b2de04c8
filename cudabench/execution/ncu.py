"""Nsight Compute: the command line `cudabench profile` runs, and its metrics read back.

cudabench runs itself under ncu in profile mode (runner.py: validation and warm-up outside
the NVTX ranges, one call inside each `cudabench@<op>/<variant>/<shape>/` range), with one
`--nvtx-include` per case, so ncu profiles exactly the asked cases. The report is read back
with `ncu --import REPORT --csv --page raw --print-units base`: a header row of metric names,
a row of units, then one row per kernel in launch order; numbers carry thousands separators
("1,156"), and the column `thread Domain:Push/Pop_Range:...` holds the kernel's NVTX stack as
`<tid>  "<domain>:<range>:<payload type>:...:<message>"  "..."`. The kernels of a range are
summed (times, bytes) or duration-weighted (percentages) into one `ProfileMetrics`.

Pure text in, records out: no GPU and no ncu needed to test it (tests/fixtures/ncu/ holds real
CSV pages captured on an H200).
"""

from __future__ import annotations

import io
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cudabench.backends.nvtx import DOMAIN, ncu_filter
from cudabench.core.dtypes import DTYPES
from cudabench.core.records import RowKey, split_label
from cudabench.core.timing import ProfileMetrics

NVTX_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"

# ProfileMetrics field -> the ncu metric it is read from (units: --print-units base)
DURATION = "gpu__time_duration.sum"  # ns
PERCENTS = {
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
}
BYTES = {"dram_read_bytes": "dram__bytes_read.sum", "dram_write_bytes": "dram__bytes_write.sum"}
REGISTERS = "launch__registers_per_thread"
SHARED = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"  # Hz
METRICS = (DURATION, *PERCENTS.values(), *BYTES.values(), REGISTERS, *SHARED, SM_CLOCK)
# Cold profiles only: the L2 sectors the SMs' reads (L1TEX, "tex") looked up, hit and missed
# -> ProfileMetrics.l2_hit_pct, summed over the range's kernels. Not lts__t_sector_hit_rate:
# that one counts every client of L2 (instruction and constant fetches, the other L2
# partition's requests), and on a cold launch of a tiny kernel (reduce at 3x5, H200,
# tests/fixtures/ncu/set_full.csv) it read 54-67% while these two said 0 of 2 reads hit.
L2_READ_HIT = "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"  # sectors
L2_READ_MISS = "lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"
L2_METRICS = (L2_READ_HIT, L2_READ_MISS)

BUSY_PCT = 60.0  # a unit above this % of its peak is the one the kernel is bound by
# A cold launch whose reads hit L2 more than this is flagged (cold_l2_note). After a flush
# the first read of every sector misses, so a kernel that reads its data k times can hit at
# most 1 - 1/k of its read sectors: ~0% for one pass (reduce, transpose, stream copies), at
# most 50% for two. Above half, either the kernel reuses its data three times or more (a
# tiled GEMM, a stencil's halo, a vector every block reads) or the flush left data in L2.
COLD_L2_HIT_PCT = 50.0

_RANGE = re.compile(r'"([^":]*):([^":]*):')  # "<domain>:<range>:..." in the NVTX column


class NcuError(RuntimeError):
    """ncu is missing, refused to profile, or wrote something we cannot read."""


@dataclass(frozen=True)
class KernelRecord:
    """One profiled kernel: its name, NVTX stack in the cudabench domain, and metrics."""

    name: str
    ranges: tuple[str, ...]  # e.g. ("reduce", "float4", "442368x128")
    metrics: dict[str, float]


def find_ncu(explicit: str | None = None) -> str:
    """The ncu executable: --ncu PATH, else on PATH, else in $CUDA_HOME or /usr/local/cuda."""
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise NcuError(f"--ncu {explicit}: no such executable")
        return found
    candidates = [shutil.which("ncu")] + [
        str(Path(home) / "bin" / "ncu")
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")
        if home
    ]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise NcuError(
        "ncu (Nsight Compute) not found on PATH or in /usr/local/cuda/bin: install the CUDA "
        "toolkit's Nsight Compute, or pass --ncu PATH"
    )


def profile_command(
    ncu: str,
    cases: Iterable[tuple[str, str, str, str]],
    report: Path,
    child: list[str],
    *,
    cold: bool = True,
    section_set: str | None = None,
    sections: Iterable[str] = (),
    metrics: Iterable[str] = (),
) -> list[str]:
    """The ncu command line for the (op, variant, shape, dtype) cases; `child` is the cudabench
    command in profile mode. Clocks stay the card's own (`--clock-control none`, as cudabench
    times); `--cache-control all` flushes the caches before each kernel (cold), `none` not.
    Cold, the L2 read lookups are asked too (L2_METRICS: was the launch really cold?)."""
    command = [ncu, "--nvtx"]
    for op, variant, shape, dtype in cases:
        command += ["--nvtx-include", ncu_filter(op, variant, shape, dtype)]
    command += ["--clock-control", "none", "--cache-control", "all" if cold else "none"]
    if section_set:
        command += ["--set", section_set]
    for section in sections:
        command += ["--section", section]
    asked = [*METRICS, *(L2_METRICS if cold else ()), *metrics]
    command += ["--metrics", ",".join(dict.fromkeys(asked))]
    command += ["--force-overwrite", "--export", str(report), *child]
    return command


def import_command(ncu: str, report: Path) -> list[str]:
    """The command that prints a report's raw page as CSV, in base units."""
    return [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def ncu_messages(output: str) -> list[str]:
    """ncu's own error lines (`==ERROR== ...`), or its warnings when there are no errors."""
    errors = [line.strip() for line in output.splitlines() if line.startswith("==ERROR==")]
    if errors:
        return errors
    return [line.strip() for line in output.splitlines() if line.startswith("==WARNING==")]


def nvtx_ranges(cell: str, domain: str = DOMAIN) -> tuple[str, ...]:
    """The push/pop ranges of `domain`, outermost first, from the raw page's NVTX cell."""
    return tuple(name for dom, name in _RANGE.findall(cell or "") if dom == domain)


def _number(text: str) -> float | None:
    text = (text or "").replace(",", "").strip()
    if not text or text.lower() in ("n/a", "nan"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_raw_csv(text: str, extra: Iterable[str] = ()) -> list[KernelRecord]:
    """The kernels of a raw CSV page, in launch order, with cudabench's metrics and the
    `extra` ones. NcuError if it is not a raw page."""
    import pandas as pd

    try:
        table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise NcuError(f"ncu's CSV could not be read: {exc}") from exc
    if "Kernel Name" not in table.columns or DURATION not in table.columns:
        head = text.strip().splitlines()[:1]
        raise NcuError(f"not an ncu raw CSV page (first line: {head[0][:120] if head else ''!r})")
    table = table.iloc[1:]  # the units row
    wanted = [m for m in dict.fromkeys([*METRICS, *L2_METRICS, *extra]) if m in table.columns]
    kernels = []
    for _, row in table.iterrows():
        values = {m: _number(row[m]) for m in wanted}
        kernels.append(
            KernelRecord(
                name=row["Kernel Name"],
                ranges=nvtx_ranges(row.get(NVTX_COLUMN, "")),
                metrics={m: v for m, v in values.items() if v is not None},
            )
        )
    return kernels


def bound_hint(memory_pct: float | None, sm_pct: float | None) -> str:
    """Which unit limits the kernel: the busier of memory and SM if it is above BUSY_PCT of
    its peak, else "latency" (neither is busy: too little parallelism, or stalls)."""
    if memory_pct is None and sm_pct is None:
        return ""
    mem, sm = memory_pct or 0.0, sm_pct or 0.0
    if max(mem, sm) < BUSY_PCT:
        return "latency"
    return "memory" if mem >= sm else "compute"


def summarize(kernels: list[KernelRecord], extra: Iterable[str] = ()) -> ProfileMetrics:
    """One range's kernels as one record: times and bytes summed, percentages weighted by
    duration, registers and shared memory the largest; a metric no kernel has stays None.
    `extra` metrics: summed if their name says `.sum`, else duration-weighted."""
    durations = [k.metrics.get(DURATION, 0.0) for k in kernels]
    total = sum(durations)

    def weighted(metric: str) -> float | None:
        pairs = [(k.metrics[metric], d) for k, d in zip(kernels, durations) if metric in k.metrics]
        if not pairs:
            return None
        weight = sum(d for _, d in pairs)
        if weight <= 0:
            return sum(v for v, _ in pairs) / len(pairs)
        return sum(v * d for v, d in pairs) / weight

    def summed(metric: str) -> float | None:
        values = [k.metrics[metric] for k in kernels if metric in k.metrics]
        return sum(values) if values else None

    def largest(values: list[float]) -> int | None:
        return int(max(values)) if values else None

    percents = {field: weighted(metric) for field, metric in PERCENTS.items()}
    shared = [
        sum(k.metrics.get(m, 0.0) for m in SHARED) for k in kernels if any(m in k.metrics for m in SHARED)
    ]
    clock = weighted(SM_CLOCK)
    hits, misses = summed(L2_READ_HIT), summed(L2_READ_MISS)
    looked_up = (hits or 0.0) + (misses or 0.0)
    return ProfileMetrics(
        kernels=len(kernels),
        duration_us=total / 1e3,
        **percents,
        registers=largest([k.metrics[REGISTERS] for k in kernels if REGISTERS in k.metrics]),
        shared_mem_bytes=largest(shared),
        **{field: summed(metric) for field, metric in BYTES.items()},
        sm_clock_ghz=None if clock is None else clock / 1e9,
        l2_hit_pct=(
            100 * (hits or 0.0) / looked_up
            if hits is not None and misses is not None and looked_up > 0
            else None
        ),
        bound=bound_hint(percents["memory_pct"], percents["sm_pct"]),
        extra={
            name: value
            for name in extra
            if (value := summed(name) if ".sum" in name else weighted(name)) is not None
        },
    )


def metrics_by_case(kernels: list[KernelRecord], extra: Iterable[str] = ()) -> dict[RowKey, ProfileMetrics]:
    """A row's key (op, variant, shape, dtype, params) -> the summary of the kernels whose cudabench
    NVTX stack starts with those four ranges (inner ranges, e.g. a library's own, are kept
    with them). A stack of three (a report from before the dtype range) is float32."""
    groups: dict[RowKey, list[KernelRecord]] = {}
    for kernel in kernels:
        stack = kernel.ranges
        if len(stack) >= 4 and stack[3] in DTYPES:
            op, label, shape, dtype = stack[:4]
        elif len(stack) == 3:
            (op, label, shape), dtype = stack, "float32"
        else:
            continue
        variant, params = split_label(label)  # `float4[BLOCK=256]`: a configured variant
        groups.setdefault(RowKey(op, variant, shape, dtype, params), []).append(kernel)
    extra = tuple(extra)
    return {key: summarize(group, extra) for key, group in groups.items()}


def cold_l2_note(metrics: ProfileMetrics | None) -> str:
    """A warning for a cold launch whose reads hit L2 on more than COLD_L2_HIT_PCT of their
    sectors ('' otherwise): a kernel that rereads its data may do so legitimately, so this
    asks rather than fails."""
    if metrics is None or metrics.l2_hit_pct is None or metrics.l2_hit_pct <= COLD_L2_HIT_PCT:
        return ""
    return (
        f"the cold launch hit L2 on {metrics.l2_hit_pct:.0f}% of its read sectors: was the "
        f"flush effective? (after a flush a kernel that reads its data twice hits at most "
        f"{COLD_L2_HIT_PCT:.0f}%; more, it rereads its data or L2 was not cold)"
    )
