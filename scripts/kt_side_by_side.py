"""Kernel Tuner and `cudabench tune` on the same kernel, space and GPU, one after the other.

    python scripts/kt_side_by_side.py OUT_DIR [--cold]

The kernel is reduce's float4 variant (kernels/common/reduce.cuh, cb::reduce_rows<true>) on
one row of 2^24 floats, over the 200-configuration space BLOCK {128..1024} x ITEMS {16..256}
x GRID_K {1..16} x LOADS {2, 4}; the grid is the one cudabench/ops/reductions.py's `segments` rule gives
(chunks = min(GRID_K x SMs, ceil(n / (BLOCK x ITEMS)))). Kernel Tuner gets a two-line entry
point that reads `chunks` from gridDim (its arguments are the same for every configuration),
brute force, 7 iterations, the answer checked. cudabench runs `cudabench tune ... --strategy
exhaustive`. With --cold each gets an empty compile cache first (CuPy's, cudabench's). Then
both bests meet in one interleaved `cudabench run` and under Nsight Compute (`cudabench
profile`), so the two clocks' rankings can be checked against ncu's. Writes
OUT_DIR/side_by_side.json and prints a summary.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 1 << 24
SPACE = {
    "BLOCK": [128, 256, 512, 1024],
    "ITEMS": [16, 32, 64, 128, 256],
    "GRID_K": [1, 2, 4, 8, 16],
    "LOADS": [2, 4],
}
KT_SOURCE = """
#include "common/reduce.cuh"
extern "C" __global__ void __launch_bounds__(BLOCK)
kt_reduce_float4(const float* __restrict__ x, float* __restrict__ out, float* partials,
                 unsigned* counters, long long rows, long long cols) {
  cb::reduce_rows<true>(x, out, partials, counters, rows, cols, BLOCK, gridDim.x / (int)rows);
}
"""


def kernel_tuner(sm_count: int) -> dict:
    import kernel_tuner

    rng = np.random.default_rng(0)
    x = (rng.random(N, dtype=np.float32) * 2 - 1).astype(np.float32)
    out = np.zeros(1, np.float32)
    partials = np.zeros(16 * sm_count, np.float32)
    counters = np.zeros(1, np.uint32)
    expected = np.array([x.astype(np.float64).sum()], np.float32)

    def chunks(p: dict) -> int:
        return max(1, min(p["GRID_K"] * sm_count, math.ceil(N / (p["BLOCK"] * p["ITEMS"]))))

    start = time.monotonic()
    results, env = kernel_tuner.tune_kernel(
        "kt_reduce_float4",
        KT_SOURCE,
        chunks,
        [x, out, partials, counters, np.int64(1), np.int64(N)],
        dict(SPACE),
        grid_div_x=[],
        block_size_names=["BLOCK"],
        lang="cupy",
        compiler_options=[f"-I{ROOT / 'kernels'}", "-std=c++17"],
        iterations=7,
        answer=[None, expected, None, None, None, None],
        atol=1e-2 * float(np.abs(x).sum()) ** 0.5,
        verbose=False,
        quiet=True,
    )
    wall = time.monotonic() - start
    timed = sorted((r for r in results if isinstance(r.get("time"), float)), key=lambda r: r["time"])
    return {
        "wall_s": wall,
        "configurations": len(results),
        "timed": len(timed),
        "best": {k: timed[0][k] for k in SPACE},
        "best_us": timed[0]["time"] * 1e3,
        "top5": [({k: r[k] for k in SPACE}, r["time"] * 1e3) for r in timed[:5]],
        "version": getattr(kernel_tuner, "__version__", ""),
    }


def cudabench(out: Path) -> dict:
    command = [
        sys.executable,
        "-m",
        "cudabench",
        "tune",
        "reduce",
        "-v",
        "float4",
        "-s",
        "2^24",
        "--strategy",
        "exhaustive",
        "--budget",
        "200",
        "--no-save",
        "--no-plot",
        "-p",
        "ITEMS=16,32,64,128,256",
        "-p",
        "GRID_K=1,2,4,8,16",
        "-p",
        "LOADS=2,4",
        "-o",
        str(out / "cudabench_tune"),
    ]
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    (out / "cudabench_tune.log").write_text(proc.stdout + proc.stderr)
    (found,) = (out / "cudabench_tune").glob("*.json")
    rows = json.loads(found.read_text())["rows"]
    timed = sorted(
        (r for r in rows if r["status"] == "OK" and not r["is_baseline"]), key=lambda r: r["time_us"]
    )
    summary = next((ln for ln in proc.stderr.splitlines() if ln.startswith("exhaustive:")), "")
    return {
        "wall_s": wall,
        "exit": proc.returncode,
        "rows": len(rows),
        "summary": summary,
        "best": timed[0]["params"] if timed else None,
        "best_us": timed[0]["time_us"] if timed else None,
    }


def head_to_head(out: Path, kt_best: dict, ours: str | None) -> dict:
    """Kernel Tuner's best and cudabench's best in one interleaved `cudabench run` (the grid
    their values span, so both are in it), and the same grid under Nsight Compute
    (`cudabench profile`: gpu__time_duration.sum), to settle which clock ranked right."""
    if ours is None:
        return {}
    mine = {k: int(v) for k, v in (p.split("=") for p in ours.split(","))}
    grid = [
        arg
        for name in SPACE
        for arg in ("-p", f"{name}={','.join(str(v) for v in dict.fromkeys([kt_best[name], mine[name]]))}")
    ]
    found = {}
    for command, folder in (("run", "head_to_head"), ("profile", "head_to_head_ncu")):
        extra = ["--interleave", "--no-tuned"] if command == "run" else ["--hot"]
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "cudabench",
                command,
                "reduce",
                "-v",
                "float4",
                "-s",
                "2^24",
                *grid,
                *extra,
                "-o",
                str(out / folder),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        (out / f"{folder}.log").write_text(proc.stdout + proc.stderr)
        files = sorted((out / folder).glob("*.json"))
        if not files:  # e.g. no ncu here: say why in the report
            found[command] = {"error": (proc.stdout + proc.stderr).strip().splitlines()[-1:]}
            continue
        rows = json.loads(files[-1].read_text())["rows"]
        found[command] = {
            r["params"] or r["variant"]: {
                "time_us": r["time_us"],
                "ncu_us": (r.get("ncu") or {}).get("duration_us"),
            }
            for r in rows
        }
    return found


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    if "--cold" in sys.argv:
        for name in ("CUPY_CACHE_DIR", "CUDABENCH_CACHE"):
            os.environ[name] = tempfile.mkdtemp(prefix=name.lower())
    import cupy

    sm_count = cupy.cuda.Device(0).attributes["MultiProcessorCount"]
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    report = {
        "gpu": name,
        "cold": "--cold" in sys.argv,
        "kernel_tuner": kernel_tuner(sm_count),
        "cudabench": cudabench(out),
    }
    report["head_to_head"] = head_to_head(out, report["kernel_tuner"]["best"], report["cudabench"]["best"])
    (out / "side_by_side.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    for name in ("CUPY_CACHE_DIR", "CUDABENCH_CACHE"):
        if name in os.environ and "--cold" in sys.argv:
            shutil.rmtree(os.environ[name], ignore_errors=True)


if __name__ == "__main__":
    main()
