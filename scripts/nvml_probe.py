"""What NVML's gauges can tell on this GPU: how often the total-energy counter moves under load,
and what one watch poll (nvml.NvmlGauge.quick) and one full reading cost. Prints a small
report; used by scripts/telemetry_check.sh (docs/guide/telemetry.md records its output).

    python scripts/nvml_probe.py [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import time

import cupy as cp

from cudabench.backends.nvml import NvmlGauge


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    device = cp.cuda.Device(0)
    gauge = NvmlGauge(device.pci_bus_id)
    nvml, handle = gauge.nvml, gauge.handle

    a = cp.ones(1 << 28, dtype=cp.float32)  # 1 GiB: a copy streams DRAM
    b = cp.empty_like(a)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        for _ in range(int(args.seconds * 1e3 / 0.6) + 50):  # ~0.6 ms a copy on an H100
            b[...] = a
    changes = []
    last = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        now = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        if now != last:
            changes.append((time.perf_counter(), now - last))
            last = now
    stream.synchronize()
    gaps = [t1 - t0 for (t0, _), (t1, _) in zip(changes, changes[1:])]
    print(
        f"energy counter: {len(changes)} changes in {args.seconds:.1f} s under load; "
        f"median gap {1e3 * statistics.median(gaps):.2f} ms, min {1e3 * min(gaps):.2f} ms, "
        f"max {1e3 * max(gaps):.2f} ms; median step {statistics.median(d for _, d in changes)} mJ"
        if len(gaps) > 1
        else f"energy counter: {len(changes)} changes in {args.seconds} s"
    )
    for name, fn in (("quick()", gauge.quick), ("read()", gauge.read)):
        t0 = time.perf_counter()
        for _ in range(200):
            fn()
        print(f"{name}: {1e6 * (time.perf_counter() - t0) / 200:.1f} us a call")
    print("reading:", gauge.read())
    print("facts:", gauge.facts(), "sm clocks (base, max):", gauge.sm_clocks())


if __name__ == "__main__":
    main()
