"""Run a command while another process heats the GPU for part of it: the planted slowdown of
scripts/telemetry_check.sh. After --delay seconds, a 16-bit 8192^3 matmul loop (torch, the
tensor cores) draws the card's whole power limit for --seconds, so the driver holds the clock
back ("sw power cap") while the command's samples are taken; then the command finishes alone.

    python scripts/heater.py --delay 7 --seconds 4 -- cudabench run reduce -s 2^30 --max-time 4

Exits with the command's status; says on stderr when the heat began and ended (seconds after
the command started).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=7.0, help="seconds before the heat")
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds of heat")
    parser.add_argument("--size", type=int, default=8192, help="the matmul's edge")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command to run (put it after --)")
    started = time.perf_counter()
    child = subprocess.Popen(command)
    try:
        calls, began, ended = heat(args, started, child)
    except BaseException as exc:  # no heat: the command's numbers would be taken without it
        child.kill()
        child.wait()
        if not isinstance(exc, Exception):
            raise  # Ctrl-C
        sys.exit(f"heater: no heat ({type(exc).__name__}: {exc}); the command was stopped")
    print(
        f"heater: {calls} matmuls from {began - started:.1f} s to {ended - started:.1f} s "
        "after the command started",
        file=sys.stderr,
    )
    return child.wait()


def heat(
    args: argparse.Namespace, started: float, child: subprocess.Popen[bytes]
) -> tuple[int, float, float]:
    """Matmuls from `args.delay` seconds after `started` for `args.seconds` (or until the
    command ends): (matmuls, began, ended)."""
    import torch

    a = torch.rand(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.rand_like(a)
    c = torch.empty_like(a)
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    time.sleep(max(0.0, args.delay - (time.perf_counter() - started)))
    began = time.perf_counter()
    calls = 0
    while time.perf_counter() - began < args.seconds and child.poll() is None:
        for _ in range(8):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        calls += 8
    return calls, began, time.perf_counter()


if __name__ == "__main__":
    sys.exit(main())
