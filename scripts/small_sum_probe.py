"""Decompose a hot 2^20 float32 sum: time scripts/small_sum_probe.cu's kernels beside CuPy's
(CUB's) sum. Needs a GPU and nvcc (sm_90 or newer: one kernel is a cluster).

    python scripts/small_sum_probe.py [OUT.json]

Each kernel runs 200 times in a CUDA graph; 40 samples a kernel, taken in turn (interleaved);
the median launch time is printed. Kernels that end with a sum are checked against a float64
one first ("ok"); the pieces that do not finish it print "partial". Its CUB row (a graph of
`x.sum()` calls) read 3.36 us where `cudabench run reduce -s 2^20` read 3.0 on the same card a
minute later (docs/performance/reduce.md; the difference was not traced), so compare CUB with
`cudabench run`, and the probe's kernels with each other.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import cupy as cp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 1 << 20
REPS, SAMPLES = 200, 40
# (BLOCK, ITEMS: elements a thread, LOADS: loads in flight a thread)
CONFIGS = [(128, 16, 4), (256, 16, 4), (256, 32, 8), (512, 16, 4), (256, 8, 2)]
ONE_KERNEL = [
    "k_empty",
    "k_loads_only",
    "k_partials",
    "k_strided_fixed_partials",
    "k_tile_partials",
    "k_ticket",
    "k_gather",
    "k_release",
    "k_red",
    "k_collect_first",
    "k_collect_last",
    "k_flag_warp",
    "k_tile_gather",
    "k_tile_gather_warp",
    "k_cluster",
]
FINISHED = {
    "k_ticket",
    "k_gather",
    "k_release",
    "k_collect_first",
    "k_collect_last",
    "k_flag_warp",
    "k_tile_gather",
    "k_tile_gather_warp",
    "k_cluster",
}


def module(block: int, items: int, loads: int, chunks: int, build: Path) -> cp.RawModule:
    defines = {
        "BLOCK": block,
        "ITEMS": items,
        "LOADS": loads,
        "CL": 8,
        "GATHER": max(1, -(-chunks // block)),
        "GATHERW": max(1, -(-chunks // 32)),
    }
    cubin = build / ("probe_" + "_".join(f"{k}{v}" for k, v in defines.items()) + ".cubin")
    subprocess.run(
        [
            "nvcc",
            "-arch=sm_90",
            "-O3",
            "-std=c++17",
            f"-I{ROOT / 'kernels'}",
            *(f"-D{k}={v}" for k, v in defines.items()),
            "-cubin",
            "-o",
            str(cubin),
            str(ROOT / "scripts" / "small_sum_probe.cu"),
        ],
        check=True,
    )
    return cp.RawModule(path=str(cubin))


def main() -> None:
    x = cp.random.default_rng(1).random(N, dtype=cp.float32) - 0.5
    ref = float(cp.asnumpy(x).astype(np.float64).sum())
    out = cp.zeros(1, cp.float32)
    partials = cp.zeros(4096, cp.float32)
    words = cp.zeros(4096, cp.float32)  # the (flag, partial) words of k_flag_warp
    counters = cp.zeros(16, cp.uint32)
    stream = cp.cuda.Stream(non_blocking=True)

    cases: list[tuple[str, list]] = []
    with tempfile.TemporaryDirectory() as build:
        for block, items, loads in CONFIGS:
            chunks = N // (block * items)
            m = module(block, items, loads, chunks, Path(build))

            def launch(name, grid=chunks, block=block, m=m, scratch=None, chunks=chunks):
                f = m.get_function(name)
                args = (
                    x,
                    out,
                    partials if scratch is None else scratch,
                    counters,
                    np.int64(N),
                    np.int32(chunks),
                )
                return lambda: f((grid,), (block,), args)

            tag = f"BLOCK {block} ITEMS {items} LOADS {loads} ({chunks} blocks)"
            for name in ONE_KERNEL:
                cases.append((f"{tag} {name}", [launch(name, scratch=words if "flag" in name else None)]))
            cases.append((f"{tag} two_kernels", [launch("k_partials"), launch("k_final", grid=1)]))
            cases.append((f"{tag} tile_two_kernels", [launch("k_tile_partials"), launch("k_final", grid=1)]))
    cases.append(("CUB (cupy x.sum())", [lambda: x.sum()]))

    verdict = {}
    for name, calls in cases:
        out.fill(0)
        counters.fill(0)
        words.fill(0)
        with stream:
            for call in calls:
                call()
        stream.synchronize()
        kernel = name.split()[-1]
        if name.startswith("CUB"):
            verdict[name] = "ok" if abs(float(x.sum()) - ref) < 1e-2 else "WRONG"
        elif kernel in FINISHED or "two_kernels" in kernel:
            verdict[name] = "ok" if abs(float(out.get()[0]) - ref) < 1e-2 else "WRONG"
        else:
            verdict[name] = "partial"

    graphs = []
    for name, calls in cases:
        with stream:
            stream.begin_capture()
            for _ in range(REPS):
                for call in calls:
                    call()
            graph = stream.end_capture()
        graph.upload(stream)
        graphs.append((name, graph))
    samples: dict[str, list[float]] = {name: [] for name, _ in graphs}
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(SAMPLES):
        for name, graph in graphs:
            counters.fill(0)
            start.record(stream)
            graph.launch(stream)
            end.record(stream)
            end.synchronize()
            samples[name].append(cp.cuda.get_elapsed_time(start, end) * 1000 / REPS)
    results = {}
    for name, _ in graphs:
        median = statistics.median(samples[name])
        results[name] = {"median_us": median, "min_us": min(samples[name]), "check": verdict[name]}
        print(f"{name:60s} {median:6.2f} us  (min {min(samples[name]):6.2f})  {verdict[name]}")
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
