"""Check cudabench's timing and NVTX ranges against Nsight Compute, on the GPU.

For each case (op, shape, variant) given as `reduce:442368x128:float4`:
1. run cudabench normally (hot L2) and take its median time;
2. run it again under ncu with the case's NVTX include filter, as `cudabench.backends.nvtx.ncu_filter`
   builds it from the row's label and shape (`cudabench@op/label/shape/`; a configured
   variant's label carries its `[params]`, which the filter escapes for ncu),
   `--clock-control none` (the card's own clocks), `--cache-control none` (hot, as cudabench
   measured) and the metric gpu__time_duration.sum, every launch in the range profiled;
3. check that the filter caught only the variant's kernels, and as many as cudabench launched
   in that range (1 validation + warm-up + 3 pilot + batch x samples, times the kernels per
   call), then compare ncu's median duration of the timed launches (a call's kernels summed)
   with cudabench's median, and report the SM clock ncu saw.

Usage: python scripts/ncu_check.py reduce:442368x128:float4 reduce:1048576:atomic ... [--ncu PATH]
Prints one line per case; exits 1 if a filter check fails.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from cudabench.backends.nvtx import ncu_filter
from cudabench.core.records import row_label

# launches are profiled one by one (slowly): a few warm-ups and samples; under ncu every
# launch is slow to the event timer, so the batch is 1 and a sample is one launch
NCU_WARMUP, NCU_SAMPLES = 2, 10
PILOT_SAMPLES = 3  # cudabench.measure.sampling.PILOT_SAMPLES
METRICS = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"


def cudabench(args: list[str], out: Path, wrapper: list[str] | None = None) -> dict:
    out = out.with_suffix(".json")  # a file stem: `-o x.json` writes x.json and x.csv
    cmd = [*(wrapper or []), sys.executable, "-m", "cudabench", "run", *args, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def ncu_durations(ncu: str, report: Path) -> pd.DataFrame:
    csv = subprocess.run(
        [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # row 1 names the metrics, row 2 gives their units; numbers carry thousands separators
    table = pd.read_csv(io.StringIO(csv), skiprows=[1], dtype=str)
    names = METRICS.split(",")
    for name in names:
        table[name] = pd.to_numeric(table[name].str.replace(",", ""), errors="coerce")
    return table.dropna(subset=names)[["Kernel Name", *names]]


def check(case: str, ncu: str, folder: Path) -> bool:
    op, shape, variant = case.split(":")
    base = ["--shape", shape, "--variant", variant]
    plain = cudabench([op, *base], folder / f"{variant}_{shape}_plain")
    row = next(r for r in plain["rows"] if r["variant"] == variant)
    quick = [
        op,
        *base,
        "--warmup",
        str(NCU_WARMUP),
        "--min-samples",
        str(NCU_SAMPLES),
        "--min-time",
        "0",
        "--max-time",
        "1000",
    ]
    # the range names the row's label (a configured variant's `[params]` included) and the
    # shape as cudabench prints it (1073741824, not 2^30), so the filter is built from the row
    nvtx = ncu_filter(op, row_label(row["variant"], row["params"]), row["shape"])
    report = folder / f"{variant}_{shape}"
    profiled = cudabench(
        quick,
        folder / f"{variant}_{shape}_ncu",
        wrapper=[
            ncu,
            "--nvtx",
            "--nvtx-include",
            nvtx,
            "--clock-control",
            "none",
            "--cache-control",
            "none",
            "--metrics",
            METRICS,
            "-f",
            "-o",
            str(report),
        ],
    )
    prow = next(r for r in profiled["rows"] if r["variant"] == variant)
    kernels = ncu_durations(ncu, report.with_suffix(".ncu-rep"))
    first_timed = 1 + NCU_WARMUP + PILOT_SAMPLES  # validation, warm-up, pilot come first
    calls = first_timed + prow["batch"] * prow["samples"]
    names = sorted(set(kernels["Kernel Name"]))
    per_call = len(kernels) / calls
    ok = per_call == int(per_call) and per_call >= 1
    if not row["is_baseline"]:
        ok = ok and names == [f"reduce_sum_{variant}"] and per_call == 1
    # kernels come in launch order: group them into calls, a call's time is their sum
    durations = list(kernels["gpu__time_duration.sum"])
    k = max(1, int(per_call))
    per_call_ns = [sum(durations[i : i + k]) for i in range(0, len(durations), k)][first_timed:]
    ncu_us = statistics.median(per_call_ns) / 1e3
    sm_ghz = statistics.median(kernels["sm__cycles_elapsed.avg.per_second"]) / 1e9
    print(
        f"{case:28s} {nvtx!r}: {len(kernels)} kernels for {calls} calls "
        f"({', '.join(n[:40] for n in names)}) {'OK' if ok else 'MISMATCH'} | "
        f"cudabench {row['time_us']:.2f} us ({row['method']} x{row['batch']}), "
        f"ncu {ncu_us:.2f} us a call (min {min(per_call_ns) / 1e3:.2f}), "
        f"cudabench/ncu {row['time_us'] / ncu_us:.3f}, SM clock under ncu {sm_ghz:.2f} GHz",
        flush=True,
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="op:shape:variant")
    parser.add_argument("--ncu", default=os.environ.get("NCU", "ncu"))
    parser.add_argument("--keep", type=Path, help="folder to keep reports and results in")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ncu_check_"))
    folder.mkdir(parents=True, exist_ok=True)
    results = [check(case, args.ncu, folder) for case in args.cases]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
