"""Issue 13's table: each row of `cudabench profile ... --timer both` results files (or the
folders holding them), the kernel clock (CUPTI) and the events clock against Nsight Compute's
gpu__time_duration.sum.

    python3 scripts/cupti_vs_ncu.py OUT/cold.json OUT/hot.json > table.md

`ncu SM µs` is sm__cycles_elapsed.max / sm__cycles_elapsed.avg.per_second (when the run asked
for them): how long the SMs were busy, for one-kernel rows. A case meets the issue's target
when the kernel clock is within 3% of ncu, or within 0.3 µs where ncu reads under 10 µs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from cudabench.record.results import read_results  # noqa: E402


def meets(mine: float, ncu: float) -> bool:
    return abs(mine - ncu) <= (0.3 if ncu < 10 else 0.03 * ncu)


def main(folders: list[str]) -> None:
    print(
        "| mode | op | shape | variant | kernels | ncu µs | ncu SM µs | cupti µs | Δ cupti "
        "| events µs | Δ events | target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    met = total = 0
    for folder in folders:
        where = Path(folder)
        for path in sorted(where.glob("*.json")) if where.is_dir() else [where]:
            meta, rows = read_results(path)
            for r in rows:
                n = r.ncu
                if n is None or not r.time_us or not n.duration_us:
                    continue
                cycles = n.extra.get("sm__cycles_elapsed.max")
                rate = n.extra.get("sm__cycles_elapsed.avg.per_second")
                sm = f"{cycles / rate * 1e6:,.2f}" if cycles and rate and n.kernels == 1 else ""
                ok = meets(r.time_us, n.duration_us)
                met, total = met + ok, total + 1
                events = r.events_us
                print(
                    f"| {meta.timing_mode} | {r.op} | {r.shape} | {r.label} | {n.kernels} | "
                    f"{n.duration_us:,.2f} | {sm} | {r.time_us:,.2f} | "
                    f"{100 * (r.time_us / n.duration_us - 1):+.1f}% | "
                    f"{'' if events is None else f'{events:,.2f}'} | "
                    f"{'' if events is None else f'{100 * (events / n.duration_us - 1):+.1f}%'} | "
                    f"{'met' if ok else 'missed'} |"
                )
    print(f"\n{met} of {total} cases within 3% of ncu (0.3 µs under 10 µs)")


if __name__ == "__main__":
    main(sys.argv[1:])
