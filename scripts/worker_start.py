"""How long plain workers take to say ready when one starts for every GPU at once, as a run
starts them (issue 45: on four H200s the last was ready 2.9 s after the command started,
against 1.4 s on one GPU).

    python3 scripts/worker_start.py [--devices all] [--rounds 3] [--torch] [-o OUT.json]

Each round starts a plain worker for every GPU at once through the pool's own
`worker_process.spawn`, in two ways: `visible` (each worker sees every GPU, as before
workers were shown theirs alone) and `alone` (each is shown its own GPU through
CUDA_VISIBLE_DEVICES, as a run does now), and times each one's "ready" from the moment the
first was started. `--torch` also starts a successor that imports torch for every GPU beside
them, as a run whose jobs need torch does. A table goes to the terminal, the figures to
`-o`. Where the workers cannot be shown their GPU alone (the fake backend, GPUs that NVML
cannot count), `alone` is said to be the same as `visible`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from cudabench.execution import worker_process

STARTUP_S = 180.0


def start_all(devices: list[int], alone: bool, torch: bool) -> dict[str, Any]:
    """Start a plain worker (and with `torch` a successor) for each device at once; each
    plain worker's seconds to "ready" from the first start, or its failure."""
    shown = worker_process.alone
    if not alone:
        worker_process.alone = lambda device: None  # type: ignore[assignment]
    began = time.monotonic()
    try:
        workers = [worker_process.spawn(d, "events") for d in devices]
        successors = [worker_process.spawn(d, "events", ("torch",)) for d in devices] if torch else []
    finally:
        worker_process.alone = shown  # type: ignore[assignment]
    ready: dict[str, float | str] = {}
    try:
        for worker in workers:
            left = STARTUP_S - (time.monotonic() - began)
            if not worker.inbox.poll(max(0.0, left)):
                ready[str(worker.device)] = f"not ready in {STARTUP_S:.0f} s"
                continue
            try:
                message = worker.inbox.recv()
            except EOFError:
                ready[str(worker.device)] = f"died: {worker.tail() or 'no output'}"
                continue
            seconds = round(time.monotonic() - began, 3)
            ready[str(worker.device)] = seconds if message[0] == "ready" else f"{message[0]}: {message[1:]}"
    finally:
        for worker in [*workers, *successors]:
            worker_process.kill(worker)
    shown_alone = [w.visible for w in workers]
    return {"ready_s": ready, "shown": shown_alone}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="all", help="GPU indices like 0,1, or all (default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch", action="store_true", help="successors importing torch beside them")
    parser.add_argument("-o", "--output", type=Path, help="the figures as JSON")
    args = parser.parse_args(argv)
    try:
        chosen = worker_process.parse_devices(args.devices)
    except Exception as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    devices = list(chosen) if chosen is not None else worker_process.visible_gpu_count_list()
    if not devices:
        print("error: the GPUs cannot be counted here (no NVML): give --devices", file=sys.stderr)
        return 2
    can_alone = all(worker_process.alone(d) is not None for d in devices)
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        for mode in ("visible", "alone"):
            found = start_all(devices, alone=mode == "alone", torch=args.torch)
            rounds.append({"round": number, "mode": mode, **found})
            times = [v for v in found["ready_s"].values() if isinstance(v, float)]
            slowest = f"{max(times):.3f}" if len(times) == len(devices) else "failed"
            each = ", ".join(f"GPU {d} {v}" for d, v in found["ready_s"].items())
            print(f"round {number} {mode:7s} slowest {slowest} s: {each}", flush=True)
    for mode in ("visible", "alone"):
        slowest = [
            max(r["ready_s"].values())
            for r in rounds
            if r["mode"] == mode and all(isinstance(v, float) for v in r["ready_s"].values())
        ]
        if slowest:
            median = statistics.median(slowest)
            print(f"{mode}: the slowest worker's ready, median of {len(slowest)} rounds: {median:.3f} s")
    if not can_alone:
        print("note: the workers cannot be shown their GPU alone here: `alone` is `visible`")
    if args.output is not None:
        summary = {"devices": devices, "torch": args.torch, "can_alone": can_alone, "rounds": rounds}
        args.output.write_text(json.dumps(summary, indent=1))
    failed = any(not isinstance(v, float) for r in rounds for v in r["ready_s"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
