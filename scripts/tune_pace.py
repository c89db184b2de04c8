"""Issue 43's benchmark: the pace of `cudabench tune` on one GPU, on all, and against Kernel
Tuner on a user's own kernel, in one run.

    python scripts/tune_pace.py OUT_DIR [--parts reduce,user] [--devices-all] [--skip-kt] [--quick]
                                        [--first-run]

reduce: reduce float4 at 2^24 over BLOCK {128..1024} x ITEMS {16..256} x GRID_K {1..16} x
LOADS {2, 4} (200 configurations), exhaustive: a run that compiles them (discarded), the timed
run on GPU 0, then (--devices-all) on every GPU (and on GPUs 0,1 where there are more than
two). Target: at most 3 s of search, 1.8x on two.
user: a row sum of a 442368x128 float32 matrix written as a user's op (scripts/pace_ops/rowsum,
copied to OUT_DIR/ops/rowsum: op.py with its own grid rule; warp.cu taking (const float* x,
float* out, int rows, int cols), BLOCK x ROWS x UNROLL x VEC = 162 configurations), searched
from empty compile caches by `cudabench tune --strategy exhaustive` and by Kernel Tuner (brute
force, CuPy backend, 7 iterations, the answer checked; a child process, so its wall time holds
its imports), then both bests in one interleaved `cudabench run`. Target: cudabench's wall
<= 0.35x Kernel Tuner's.

Wall times are this script's clock; tune's summary lines go to OUT_DIR/tune_pace.json raw and
parsed, each command's output to OUT_DIR/<step>.log; a table is printed. A failed step is
recorded and the rest runs; exit status 1 if any failed. --quick: a few configurations a
space. CUDABENCH_BACKEND=fake checks the plumbing without a GPU (no Kernel Tuner; shapes 2^16
and 4608x128).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT_S = 300
FAKE = os.environ.get("CUDABENCH_BACKEND") == "fake"
REDUCE_SHAPE, (ROWS, COLS) = ("2^16", (4608, 128)) if FAKE else ("2^24", (442368, 128))
REDUCE = {
    "BLOCK": [128, 256, 512, 1024],
    "ITEMS": [16, 32, 64, 128, 256],
    "GRID_K": [1, 2, 4, 8, 16],
    "LOADS": [2, 4],
}
USER = {"BLOCK": [32, 64, 128, 256, 512, 1024], "ROWS": [1, 2, 4], "UNROLL": [1, 2, 4], "VEC": [1, 2, 4]}
QUICK = {  # --quick: a few configurations a space
    "reduce": {"BLOCK": [128, 256], "ITEMS": [16, 32], "GRID_K": [1], "LOADS": [2]},
    "user": {"BLOCK": [32, 256], "ROWS": [1, 2], "UNROLL": [1], "VEC": [1, 4]},
}
CACHES = ("CUPY_CACHE_DIR", "CUDABENCH_CACHE")

USER_OP = ROOT / "scripts" / "pace_ops" / "rowsum"  # the user's op folder: op.py, warp.cu


def write_op(folder: Path) -> Path:
    """The user's op folder `folder/rowsum` (op.py, warp.cu); returns it."""
    op = folder / "rowsum"
    shutil.copytree(USER_OP, op, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return op


def space_args(space: dict[str, list[int]]) -> list[str]:
    return [a for name, values in space.items() for a in ("-p", f"{name}={','.join(map(str, values))}")]


def label(params: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


N, INT = r"([\d.]+)", r"(\d+)"  # a value with a point is parsed as a float
SUMMARY = {  # the numbers of tune's two summary lines, by name
    "measured": rf"{INT} configurations measured",
    "space_valid": rf"space {INT} valid",
    "failed": rf"{INT} failed",
    "search_s": rf" in {N} s;",
    "ties": rf"{INT} more within the noise",
    "over_default": rf"{N}× the default",
    "configurations": rf"where the time went: {INT} configurations",
    "rounds_s": rf"configurations in {N} s",
    "per_config_ms": rf"{N} ms each",
    "setup_ms": rf"set-up {N} ms",
    "timing_ms": rf"timing {N} ms",
    "host_ms": rf"host {N} ms",
    "workers": rf"\({INT} workers at a time\)",
    "nvcc_configurations": rf"nvcc {INT} configurations",
    "nvcc_s": rf"configurations, {N} s ahead",
    "nvcc_waited_s": rf"{N} s waited for",
    "strategy_s": rf"strategy {N} s",
    "final_s": rf"final interleaved round {N} s",
    "final_setup_s": rf"set-up {N} s, the longest",
    "final_timing_s": rf"timing {N} s, its rows in turn",
}


def parse_tune(step: dict, results: Path) -> dict:
    """A tune step's `exhaustive:` and `where the time went:` lines, raw and as numbers, and its
    best configuration with the time the final round gave it (from the results file)."""
    lines = step.pop("output").splitlines()
    summary = next((ln for ln in lines if ln.startswith("exhaustive:")), "")
    costs = next((ln for ln in lines if ln.startswith("where the time went:")), "")
    step.update(summary_line=summary, costs_line=costs)
    for name, pattern in SUMMARY.items():
        found = re.search(pattern, summary + "\n" + costs)
        step[name] = None if not found else (float if "." in pattern else int)(found.group(1))
    best = re.search(r"; best ([\w=,]+)", summary)
    step["best"] = {k: int(v) for k, v in (p.split("=") for p in best.group(1).split(","))} if best else None
    times = {r["params"]: r["time_us"] for r in rows_of(results) if r["status"] == "OK"}
    step["best_us"] = times.get(label(step["best"])) if best else None
    return step


def rows_of(folder: Path) -> list[dict]:
    files = sorted(folder.glob("*.json"))
    return json.loads(files[-1].read_text())["rows"] if files else []


class Steps:
    """Runs each command with its output to OUT/<name>.log, timed by this script's clock."""

    def __init__(self, out: Path, env: dict[str, str]) -> None:
        self.out, self.env, self.record, self.failed = out, env, [], False

    def run(self, name: str, command: list[str], **env: str) -> dict:
        log = self.out / f"{name}.log"
        start = time.monotonic()
        with log.open("w") as sink:
            # its own process group, so that a time-out ends the tool and its worker processes
            spawn = dict(cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
            proc = subprocess.Popen(command, env={**self.env, **env}, **spawn)
            try:
                rc = proc.wait(timeout=STEP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait() and 124
        wall = time.monotonic() - start
        self.failed |= rc != 0
        step = {"step": name, "command": shlex.join(command), "rc": rc, "wall_s": round(wall, 3)}
        self.record.append({**step, "log": log.name, "timed_out": rc == 124, "env": env})
        print(f"{name}: rc {rc}, {wall:.1f} s", flush=True)
        return {**step, "output": log.read_text(errors="replace")}


def cudabench(*args: str) -> list[str]:
    return [sys.executable, "-m", "cudabench", *args]


def reduce_part(steps: Steps, out: Path, devices_all: bool, quick: bool) -> dict:
    search = ["tune", "reduce", "-v", "float4", "-s", REDUCE_SHAPE, "--strategy", "exhaustive"]
    search += ["--budget", "200", "--no-save", "--no-plot", *space_args(QUICK["reduce"] if quick else REDUCE)]
    found: dict = {"shape": REDUCE_SHAPE}
    runs = [("compile", "0"), ("one_gpu", "0")]
    if devices_all:  # on a host of more than two GPUs, on two of them as well as on all
        runs += [("two_gpus", "0,1")] * (len(gpu_names() or []) > 2) + [("all_gpus", "all")]
    for name, devices in runs:
        step = steps.run(f"reduce_{name}", cudabench(*search, "--devices", devices, "-o", str(out / name)))
        found[name] = parse_tune(step, out / name)
    one, keys = found["one_gpu"], ("search_s", "rounds_s", "wall_s")
    for name in ("two_gpus", "all_gpus"):
        several = found.get(name, {})
        if all(one.get(k) and several.get(k) for k in keys):
            found[f"{name}_over_one"] = {k: round(one[k] / several[k], 3) for k in keys}
    found["targets"] = "one GPU: search at most 3 s; two GPUs: at least 1.8x faster than one"
    return found


def kt_child(op_dir: Path, result: Path, space: dict[str, list[int]]) -> None:
    """Kernel Tuner on warp.cu: a child of this script, with a cold CuPy cache in its env."""
    start = time.monotonic()
    try:
        import kernel_tuner
    except Exception as exc:  # recorded as skipped, not failed
        result.write_text(json.dumps({"skipped": f"kernel_tuner does not import: {exc}"}))
        return
    import numpy as np

    imported = time.monotonic()
    x = np.random.default_rng(0).standard_normal((ROWS, COLS), dtype=np.float32)
    expected = x.sum(axis=1, dtype=np.float64).astype(np.float32)
    prepared = time.monotonic()
    results, env = kernel_tuner.tune_kernel(
        "rowsum_warp",
        (op_dir / "warp.cu").read_text(),
        ROWS,  # grid = ceil(rows / (BLOCK / 32 x ROWS)): the op's warp_groups rule
        [x, np.zeros(ROWS, np.float32), np.int32(ROWS), np.int32(COLS)],
        {k: list(v) for k, v in space.items()},
        grid_div_x=["BLOCK // 32", "ROWS"],
        block_size_names=["BLOCK"],
        answer=[None, expected, None, None],
        atol=1e-3,  # |row sums| ~ 11, float32's error ~ 1e-5; one element dropped is ~1 off
        lang="cupy",
        compiler_options=["-std=c++17"],
        strategy="brute_force",
        iterations=7,
        quiet=True,
    )
    tuned = time.monotonic()
    timed = sorted((r for r in results if isinstance(r.get("time"), float)), key=lambda r: r["time"])
    top = [({k: r[k] for k in space}, round(r["time"] * 1e3, 3)) for r in timed[:5]]  # ms to us
    best, best_us = top[0] if top else (None, None)
    report = {"version": kernel_tuner.__version__, "device": env.get("device_name"), "top5": top}
    seconds = {"import_s": imported - start, "inputs_s": prepared - imported, "tune_s": tuned - prepared}
    report.update({k: round(v, 3) for k, v in seconds.items()})
    report.update(configurations=len(results), timed=len(timed), best=best, best_us=best_us)
    result.write_text(json.dumps(report, default=str))


def user_part(steps: Steps, out: Path, skip_kt: bool, quick: bool, first_run: bool = False) -> dict:
    """The user's kernel, from cold: each tool compiles all its configurations into empty
    caches (cudabench's CUDABENCH_CACHE; Kernel Tuner compiles through CuPy, so its
    CUPY_CACHE_DIR). CuPy's cache also holds cudabench's own kernels (inputs, the float64
    reference, the tolerance, the check), compiled once a machine: unless `first_run`, a run
    of the op's default configuration at the same shape, into a compile cache thrown away,
    fills cudabench's CuPy cache first, as any earlier run of the tool on the machine has."""
    op_dir, space = write_op(out / "ops"), QUICK["user"] if quick else USER
    case = ["--ops", str(out / "ops"), "-s", f"{ROWS}x{COLS}"]
    found: dict = {"op_folder": str(op_dir), "shape": f"{ROWS}x{COLS}", "first_run": first_run}

    def cold() -> dict[str, str]:
        return {n: tempfile.mkdtemp(prefix=f"{n.lower()}_", dir=out / "caches") for n in CACHES}

    our_caches = cold()
    if not first_run:
        warm = [*cudabench("run", "rowsum", *case, "--no-tuned", "-o", str(out / "user_warm_cupy"))]
        steps.run("user_warm_cupy_cache", warm, **{**cold(), "CUPY_CACHE_DIR": our_caches["CUPY_CACHE_DIR"]})
    tune = ["tune", "rowsum", *case, "--strategy", "exhaustive", "--budget", "200", "--no-save", "--no-plot"]
    tune += [*space_args(space), "-o", str(out / "user_tune")]
    step = steps.run("user_cudabench_tune", cudabench(*tune), **our_caches)
    found["cudabench"] = ours = parse_tune(step, out / "user_tune")
    kt: dict = {"skipped": "--skip-kt" if skip_kt else "CUDABENCH_BACKEND=fake: no GPU" if FAKE else None}
    if kt["skipped"] is None:
        result = out / "kernel_tuner.json"
        result.unlink(missing_ok=True)
        child = [sys.executable, str(Path(__file__).resolve()), str(out), "--kt-child", str(result)]
        step = steps.run("user_kernel_tuner", child + ["--quick"] * quick, **cold())
        kt = json.loads(result.read_text()) if result.exists() else {"error": step["output"][-3000:]}
        kt.update({k: v for k, v in step.items() if k != "output"})
        if kt.get("skipped"):
            steps.record[-1]["skipped"] = kt["skipped"]
    found["kernel_tuner"] = kt
    if ours.get("wall_s") and kt.get("rc") == 0 and kt.get("best"):  # both ran, each found a best
        found["wall_ratio"] = round(ours["wall_s"] / kt["wall_s"], 3)
        found["target"] = "cudabench's wall time at most 0.35x Kernel Tuner's"
    bests = [b for b in (ours.get("best"), kt.get("best")) if b]
    if not bests:
        return found
    grid = {n: sorted({b[n] for b in bests}) for n in bests[0]}  # `run -p` takes a grid: the one they span
    run = ["run", "rowsum", *case, *space_args(grid), "--interleave", "--no-tuned"]
    step = steps.run("user_head_to_head", cudabench(*run, "-o", str(out / "head_to_head")))
    timed = {r["params"] or r["variant"]: r for r in rows_of(out / "head_to_head") if r["status"] == "OK"}
    found["head_to_head"] = {"rc": step["rc"], "rows_us": {k: r["time_us"] for k, r in timed.items()}}
    picked = [timed.get(label(b)) for b in bests]
    if len(picked) == 2 and all(picked):
        (a, sa), (b, sb) = ((r["time_us"], r.get("spread") or 0) for r in picked)
        noise = max(0.01, (sa + sb) / 2)  # as tune's ties: 1%, or the rows' mean spread if larger
        found["head_to_head"].update(
            cudabench_best_us=a, kernel_tuner_best_us=b, kt_over_ours=round(b / a, 4)
        )
        found["head_to_head"].update(same=bests[0] == bests[1], within_noise=abs(b - a) <= noise * min(a, b))
    return found


def gpu_names() -> list[str] | None:
    query = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
    try:
        text = subprocess.run(query, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [line.strip() for line in text.splitlines() if line.strip()] or None


def summary(report: dict) -> str:
    lines = ["| step | rc | wall s | search s | configurations | ms each: set-up, timing, host | best |"]
    lines.append("|---|---:|---:|---:|---:|---|---|")
    user = report.get("user", {})
    reduce = report.get("reduce", {})
    runs = [(f"reduce {k}", reduce[k]) for k in ("compile", "one_gpu", "two_gpus", "all_gpus") if k in reduce]
    runs += [(f"user {k}", user[k]) for k in ("cudabench", "kernel_tuner") if k in user]
    for name, r in runs:
        if r.get("skipped"):
            lines.append(f"| {name} | | | | | skipped: {r['skipped']} | |")
            continue
        split = ", ".join(str(r.get(k)) for k in ("setup_ms", "timing_ms", "host_ms"))
        each = f"{r['per_config_ms']}: {split}" if r.get("per_config_ms") is not None else ""
        best = f"{label(r['best'])}: {r['best_us']:.2f} µs" if r.get("best") and r.get("best_us") else ""
        cells = [r.get("rc"), r.get("wall_s"), r.get("search_s", r.get("tune_s"))]
        cells += [r.get("measured", r.get("configurations")), each, best]
        lines.append(" | ".join([f"| {name}", *("" if c is None else str(c) for c in cells)]) + " |")
    facts = {
        "reduce, one GPU's times over two GPUs'": reduce.get("two_gpus_over_one"),
        "reduce, one GPU's times over all GPUs'": reduce.get("all_gpus_over_one"),
        "user, cudabench wall / Kernel Tuner wall (target <= 0.35)": user.get("wall_ratio"),
        "user, the two bests interleaved": user.get("head_to_head"),
    }
    return "\n".join(lines + [f"- {k}: {v}" for k, v in facts.items() if v])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--parts", default="reduce,user", help="reduce, user, or both (comma-separated)")
    parser.add_argument("--devices-all", action="store_true", help="the reduce search on every GPU too")
    parser.add_argument("--skip-kt", action="store_true", help="no Kernel Tuner")
    parser.add_argument("--quick", action="store_true", help="a few configurations a space")
    parser.add_argument(
        "--first-run",
        action="store_true",
        help="user part: cudabench's CuPy cache empty too (its own kernels compiled: a machine's first run)",
    )
    parser.add_argument("--kt-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = args.out.resolve()
    if args.kt_child:
        kt_child(out / "ops" / "rowsum", args.kt_child, QUICK["user"] if args.quick else USER)
        return 0
    (out / "caches").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CUDABENCH_CEILINGS": "off"}  # no ceilings measured
    env.update(CUDABENCH_DB=str(out / "history.db"), CUDABENCH_TUNING=str(out / "tuning.json"))
    env.update({n: tempfile.mkdtemp(prefix=f"{n.lower()}_", dir=out / "caches") for n in CACHES})
    steps = Steps(out, env)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    report: dict = dict(date_utc=now, gpus=gpu_names(), backend=os.environ.get("CUDABENCH_BACKEND", "cupy"))
    report.update(host_cpus=os.cpu_count(), argv=sys.argv, quick=args.quick)
    report["env"] = {k: env[k] for k in ("CUDABENCH_CEILINGS", "CUDABENCH_DB", "CUDABENCH_TUNING")}
    try:
        if "reduce" in args.parts.split(","):
            report["reduce"] = reduce_part(steps, out, args.devices_all, args.quick)
        if "user" in args.parts.split(","):
            report["user"] = user_part(steps, out, args.skip_kt, args.quick, args.first_run)
    finally:
        report["steps"] = steps.record
        shutil.rmtree(out / "caches", ignore_errors=True)  # compiled kernels, not results
        (out / "tune_pace.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(summary(report))
    print(f"all figures: {out / 'tune_pace.json'}")
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
