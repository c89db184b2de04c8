"""The card's practical ceilings: what it can actually move in each traffic mix, and compute.

"% peak" is of the theoretical DRAM peak (2 x memory clock x bus width), which no kernel
reaches, and how close one can get depends on the mix: reading alone gets nearer than a copy.
`cudabench ceilings` measures, with ordinary catalogue ops timed like any row (kernels/stream_*/op.py),
the best rate of four mixes over arrays of L2_MULTIPLE x the L2 size: read (1 byte
read per byte moved), triad (2/3), copy (1/2) and write (0); plus the fp32 FMA rate and the
launch floor. A row's ceiling is interpolated by its read fraction (the op's bytes read over
its bytes moved) between the two nearest mixes, so a softmax (read + write, 1/2) is measured
against the copy ceiling and a row sum (read, ~1) against the read ceiling; a GFLOP/s row
against the FMA ceiling.

The ceilings are kept per (GPU model, driver, memory clock) in a JSON file (results/
ceilings.json, or $CUDABENCH_CEILINGS; "off" turns the column off), read through schema.py
like a results file. This module is the arithmetic and the file; calibration.py runs the
measurement.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cudabench.dtypes import get_dtype
from cudabench.ops import get_op
from cudabench.schema import SchemaError, read_record
from cudabench.spec import Ceilings, DeviceInfo, KernelVariant, ResultRow, Status

# The mixes by the fraction of their bytes that are read, and the op that measures each.
MIXES = {"write": 0.0, "copy": 0.5, "triad": 2 / 3, "read": 1.0}
MIX_OPS = {"read": "stream_read", "write": "stream_write", "copy": "stream_copy",
           "triad": "stream_triad"}  # fmt: skip
L2_MULTIPLE = 8  # arrays this many times the L2 size: the cache holds a sliver of them
FMA_THREADS = 1 << 24  # the FMA ceiling's threads (34 GFLOP: about half a millisecond)
# The configurations each mix is measured at, by variant (the best row is the ceiling): the
# persistent grid-stride loop (vec4) and a block per tile (tile; stream_read has no tile form:
# its block sums end in one atomicAdd each, which a grid of 10^5 blocks would queue on).
# A variant not named here (stream_copy's bulk, the TMA copy) runs at its header defaults.
STREAM_GRIDS: dict[str, dict[str, tuple[int, ...]]] = {
    "vec4": {"UNROLL": (1, 4, 8), "GRID_K": (0, 4)},
    "tile": {"UNROLL": (1, 2), "STREAM_LOADS": (0, 1)},  # write has no loads to hint
}
FMA_GRID: dict[str, tuple[int, ...]] = {"BLOCK": (256, 1024)}


def variant_grid(variant: KernelVariant) -> dict[str, tuple[int, ...]]:
    """The configurations the ceilings measure a variant of the mixes' ops (or fma) at: its
    grid above, narrowed to the parameters its header declares."""
    space = FMA_GRID if variant.op == "fma" else STREAM_GRIDS.get(variant.name, {})
    return {name: values for name, values in space.items() if name in dict(variant.params)}
OFF = "off"


class CeilingsError(ValueError):
    """A ceilings file that cannot be used, or a measurement that left a mix without a
    correct row; one line."""


def cache_path() -> Path | None:
    """Where the ceilings are kept ($CUDABENCH_CEILINGS, default results/ceilings.json);
    None when the variable says `off`."""
    text = os.environ.get("CUDABENCH_CEILINGS", "")
    if text.strip().lower() == OFF:
        return None
    return Path(text) if text else Path("results") / "ceilings.json"


def array_elements(device: DeviceInfo, asked: int | None = None) -> int:
    """float32 elements per array of the stream ops: L2_MULTIPLE x the L2 size (or more, if
    asked). CeilingsError for an asked size below that (the cache would serve part of it)."""
    least = L2_MULTIPLE * device.l2_bytes // 4
    if asked is None:
        return least
    if asked < least:
        raise CeilingsError(f"--size {asked}: the arrays must hold at least {least} floats "
                            f"({L2_MULTIPLE}x this GPU's {device.l2_bytes / 2**20:g} MiB L2), or "
                            "the cache serves part of them")  # fmt: skip
    return asked


def key_of(device: DeviceInfo) -> tuple[str, str, float]:
    return (device.name, device.driver_version, round(device.memory_clock_mhz, 1))


def gbps_at(c: Ceilings, read_fraction: float) -> float:
    """The ceiling of a mix that reads `read_fraction` of its bytes: linear between the two
    measured mixes around it."""
    points = sorted((fraction, getattr(c, f"{mix}_gbps")) for mix, fraction in MIXES.items())
    f = min(1.0, max(0.0, read_fraction))
    for (f0, g0), (f1, g1) in zip(points, points[1:]):
        if f <= f1:
            return g0 + (g1 - g0) * (f - f0) / (f1 - f0)
    return points[-1][1]


def pct_ceiling(row: ResultRow, c: Ceilings | None) -> float | None:
    """The row's throughput as % of this card's ceiling for its mix (GFLOP/s rows: of the
    FMA ceiling); None without ceilings or figures."""
    if c is None or row.status is not Status.OK:
        return None
    try:
        op = get_op(row.op)
    except KeyError:  # a row of an op this version does not know
        return None
    if row.gflops is not None:
        return 100.0 * row.gflops / c.fma_gflops if c.fma_gflops else None
    if not row.gbps or not row.bytes_moved or not hasattr(op, "bytes_read"):
        return None
    shape = tuple(int(d) for d in row.shape.split("x"))
    read = op.bytes_read(shape, get_dtype(row.dtype).itemsize)
    return 100.0 * row.gbps / gbps_at(c, read / row.bytes_moved)


def annotate(row: ResultRow, c: Ceilings | None) -> ResultRow:
    value = pct_ceiling(row, c)
    return row if value is None else dataclasses.replace(row, pct_ceiling=value)


def from_rows(rows: Iterable[ResultRow], device: DeviceInfo, measured: str,
              source: str = "") -> Ceilings:  # fmt: skip
    """The ceilings a measurement's rows set: the fastest correct row of each mix's op
    (variants and library references alike), the best FMA rate, the launch floor."""
    rows = [r for r in rows if r.status is Status.OK]
    best: dict[str, ResultRow] = {}
    for mix, op in MIX_OPS.items():
        mine = [r for r in rows if r.op == op and r.gbps]
        if not mine:
            raise CeilingsError(f"no correct row of {op}: the {mix} ceiling was not measured")
        best[mix] = max(mine, key=lambda r: r.gbps or 0.0)
    fma = max((r for r in rows if r.op == "fma" and r.gflops), key=lambda r: r.gflops or 0.0,
              default=None)  # fmt: skip
    floors = sorted(r.floor_us for r in rows if r.floor_us)
    by = [f"{mix}: {r.op} {r.label}" for mix, r in best.items()]
    if fma is not None:
        by.append(f"fma: fma {fma.label}")
    return Ceilings(
        gpu=device.name, driver=device.driver_version,
        memory_clock_mhz=round(device.memory_clock_mhz, 1), measured=measured,
        **{f"{mix}_gbps": float(best[mix].gbps or 0.0) for mix in MIX_OPS},
        fma_gflops=fma.gflops if fma is not None else None,
        floor_us=floors[len(floors) // 2] if floors else None, by=tuple(by), source=source,
    )  # fmt: skip


# ---------------------------------------------------------------- the file


def load(path: Path | None) -> list[Ceilings]:
    """The kept ceilings ([] when there is no file); CeilingsError for a bad one."""
    if path is None or not path.exists():
        return []
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or not isinstance(document.get("ceilings"), list):
            raise SchemaError("expected {\"ceilings\": [...]}")
        return [read_record(Ceilings, item, f"ceilings[{i}]")
                for i, item in enumerate(document["ceilings"])]  # fmt: skip
    except (OSError, ValueError) as exc:  # SchemaError and JSON errors are ValueErrors
        raise CeilingsError(f"{path}: {exc}".splitlines()[0]) from None


def lookup(entries: list[Ceilings], device: DeviceInfo) -> Ceilings | None:
    """The entry measured on this GPU model, driver and memory clock, if any."""
    for entry in entries:
        if (entry.gpu, entry.driver, entry.memory_clock_mhz) == key_of(device):
            return entry
    return None


def stale(entries: list[Ceilings], device: DeviceInfo) -> str:
    """Why no entry fits this GPU although its model has one ('' when none or one fits)."""
    same = [e for e in entries if e.gpu == device.name]
    if not same or lookup(entries, device) is not None:
        return ""
    e = same[-1]
    return (f"the {device.name}'s ceilings were measured with driver {e.driver} at "
            f"{e.memory_clock_mhz:g} MHz memory; now driver {device.driver_version} at "
            f"{device.memory_clock_mhz:g} MHz")


def save(entry: Ceilings, path: Path) -> None:
    """Keep `entry`, replacing one of the same key; the file is rewritten atomically."""
    entries = [e for e in load(path)
               if (e.gpu, e.driver, e.memory_clock_mhz) != (entry.gpu, entry.driver,
                                                             entry.memory_clock_mhz)]  # fmt: skip
    entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"ceilings": [dataclasses.asdict(e) for e in entries]}, indent=1)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
    os.replace(tmp, path)
