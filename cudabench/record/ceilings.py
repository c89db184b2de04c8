"""The card's practical ceilings: what it can actually move in each traffic mix, and compute.

"% peak" is of the theoretical DRAM peak (2 x memory clock x bus width), which no kernel
reaches, and how close one can get depends on the mix: reading alone gets nearer than a copy.
`cudabench ceilings` (calibration.py) measures four mixes over arrays of L2_MULTIPLE x the L2
size: read (1 byte read per byte moved), triad (2/3), copy (1/2) and write (0); plus the fp32
FMA rate and the launch floor.

A ceiling a kernel beats is not a ceiling. So each mix's ceiling is the fastest correct row of
that mix in the measurement's table (`from_rows`), whoever timed it: the stream ops' variants
(kernels/stream_*/op.py) and their library references (CUB's sum, cudaMemset, cudaMemcpy,
CuPy's and torch's triad), the library references of the catalogue ops that move a mix
(MIX_REFERENCES: reduce's sums, add's and relu's CuPy and torch), and any other row that moves
exactly that mix (`mix_of`: its read fraction within MIX_TOLERANCE of the mix's) over at least
the mix's arrays at the least calibration size. `Ceilings.by` names the row that set each
ceiling and `*_spread` keeps its spread. The FMA ceiling is the fma op's best row.

A row's ceiling is interpolated by its read fraction (the op's bytes read over its bytes
moved) between the two nearest mixes, so a softmax (read + write, 1/2) is measured against the
copy ceiling and a row sum (read, ~1) against the read ceiling; a GFLOP/s row against the FMA
ceiling. A row that runs above its ceiling by more than that ceiling's own spread (the spread
of the row that set it, interpolated likewise; SPREAD_FLOOR where unknown) shows the kept
ceilings are not the card's best: `annotate` says so in the row's notes (rows that fit in the
L2 already say they are cached, and are not flagged), and the sweep asks once, in the run's
notes, for a recalibration (RECALIBRATE).

A run's own rows count too (`raised`): a correct row that moves exactly one mix over at least
the calibration's arrays (`mix_of`, so never a row the L2 holds) and runs faster than that
mix's ceiling raises it for the run, which says so in its notes (RAISED). The measurement's
arrays are 8x the L2; larger ones read faster (an H100's first run: the 2^30 sums at 102-105%
of the read ceiling measured over 400 MB), and a ceiling a row beats is not a ceiling. Rows
between two mixes (a row sum reads 128/129 of its bytes) raise nothing: they keep the note.

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
from typing import Any

from cudabench.core.dtypes import get_dtype
from cudabench.core.records import Ceilings, DeviceInfo, KernelVariant, ResultRow, Status
from cudabench.ops.registry import get_op
from cudabench.ops.stream import Stream
from cudabench.record.schema import SchemaError, read_record

# The mixes by the fraction of their bytes that are read, and the op that measures each.
MIXES = {"write": 0.0, "copy": 0.5, "triad": 2 / 3, "read": 1.0}
MIX_OPS = {"read": "stream_read", "write": "stream_write", "copy": "stream_copy", "triad": "stream_triad"}
# The catalogue ops whose library references (CuPy's, CUB's, torch's) the measurement times
# too, at the stream ops' size, each moving one mix: a 1-D sum reads, add is a triad's traffic
# (two reads, one write), relu a copy's. No catalogue op but stream_write only writes.
MIX_REFERENCES = {"read": "reduce", "triad": "add", "copy": "relu"}
# A row moves a mix when its read fraction is this close to the mix's: a sum's one output
# value (4 bytes of 4n + 4) is not a mix of its own, while a row sum of 128 columns (128/129
# read) is between triad and read.
MIX_TOLERANCE = 1e-3
SPREAD_FLOOR = 0.01  # a ceiling whose row's spread is unknown is this wide (relative)
RECALIBRATE = "cudabench ceilings --recalibrate"
ABOVE = "above the measured "  # how the row's note starts (`flagged`)
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
        raise CeilingsError(
            f"--size {asked}: the arrays must hold at least {least} floats "
            f"({L2_MULTIPLE}x this GPU's {device.l2_bytes / 2**20:g} MiB L2), or "
            "the cache serves part of them"
        )
    return asked


def key_of(device: DeviceInfo) -> tuple[str, str, float]:
    return (device.name, device.driver_version, round(device.memory_clock_mhz, 1))


# ---------------------------------------------------------------- the mixes


def read_fraction(row: ResultRow) -> float | None:
    """The share of a correct GB/s row's bytes that are read (its op's bytes read over the
    row's bytes moved); None for a GFLOP/s row, a row without figures, or an op this version
    does not know."""
    if row.status is not Status.OK or row.gflops is not None or not row.gbps or not row.bytes_moved:
        return None
    try:
        op = get_op(row.op)
    except KeyError:  # a row of an op this version does not know
        return None
    if not hasattr(op, "bytes_read"):
        return None
    shape = tuple(int(d) for d in row.shape.split("x"))
    return op.bytes_read(shape, get_dtype(row.dtype).itemsize) / row.bytes_moved


def least_bytes(mix: str, device: DeviceInfo) -> int:
    """The bytes a row of `mix` must move to count for its ceiling: the mix's arrays (its
    stream op's reads and writes) of L2_MULTIPLE x the L2 size each."""
    stream = get_op(MIX_OPS[mix])
    assert isinstance(stream, Stream)
    return (stream.reads + stream.writes) * 4 * array_elements(device)


def mix_of(row: ResultRow, device: DeviceInfo) -> str | None:
    """The mix a correct row measures, if it moves exactly one (its read fraction within
    MIX_TOLERANCE of the mix's) over at least the mix's arrays at the calibration size
    (`least_bytes`); None for any other row."""
    fraction = read_fraction(row)
    if fraction is None:
        return None
    for mix, share in MIXES.items():
        if abs(fraction - share) <= MIX_TOLERANCE and (row.bytes_moved or 0) >= least_bytes(mix, device):
            return mix
    return None


def _between(read_fraction: float) -> tuple[str, str, float]:
    """The two measured mixes around a read fraction, and the weight of the second (0..1)."""
    order = sorted(MIXES, key=lambda m: MIXES[m])
    f = min(1.0, max(0.0, read_fraction))
    for lo, hi in zip(order, order[1:]):
        if f <= MIXES[hi]:
            return lo, hi, (f - MIXES[lo]) / (MIXES[hi] - MIXES[lo])
    return order[-2], order[-1], 1.0


def gbps_at(c: Ceilings, read_fraction: float) -> float:
    """The ceiling of a mix that reads `read_fraction` of its bytes: linear between the two
    measured mixes around it."""
    lo, hi, w = _between(read_fraction)
    low: float = getattr(c, f"{lo}_gbps")
    high: float = getattr(c, f"{hi}_gbps")
    return (1 - w) * low + w * high


def spread_at(c: Ceilings, read_fraction: float) -> float:
    """The relative spread of that ceiling: of the rows that set the two mixes around it,
    interpolated likewise (SPREAD_FLOOR for a mix whose row's spread is unknown)."""
    lo, hi, w = _between(read_fraction)
    spreads = [getattr(c, f"{mix}_spread") for mix in (lo, hi)]
    low, high = (SPREAD_FLOOR if s is None else s for s in spreads)
    return (1 - w) * low + w * high


def pct_ceiling(row: ResultRow, c: Ceilings | None) -> float | None:
    """The row's throughput as % of this card's ceiling for its mix (GFLOP/s rows: of the
    FMA ceiling); None without ceilings or figures."""
    if c is None or row.status is not Status.OK:
        return None
    if row.gflops is not None:
        try:
            get_op(row.op)
        except KeyError:  # a row of an op this version does not know
            return None
        return 100.0 * row.gflops / c.fma_gflops if c.fma_gflops else None
    fraction = read_fraction(row)
    return None if fraction is None else 100.0 * (row.gbps or 0.0) / gbps_at(c, fraction)


def above(row: ResultRow, c: Ceilings | None, device: DeviceInfo) -> str:
    """The note for a GB/s row faster than its mix's ceiling by more than that ceiling's
    spread: the kept ceilings are not the card's best. '' for any other row, and for a row
    that fits in the L2 (the runner's note says it is cached)."""
    fraction = read_fraction(row)
    if c is None or fraction is None or (row.bytes_moved or 0) <= device.l2_bytes:
        return ""
    ceiling, spread = gbps_at(c, fraction), spread_at(c, fraction)
    excess = (row.gbps or 0.0) / ceiling - 1
    if excess <= spread:
        return ""
    lo, hi, _ = _between(fraction)
    exact = [mix for mix, share in MIXES.items() if abs(fraction - share) <= MIX_TOLERANCE]
    name = f"{exact[0]} ceiling" if exact else f"ceiling of its mix (between {lo} and {hi})"
    return (
        f"{ABOVE}{name} ({ceiling:,.0f} GB/s) by {100 * excess:.1f}%, more than its "
        f"spread ({100 * spread:.1f}%): `{RECALIBRATE}`"
    )


def flagged(row: ResultRow) -> bool:
    """Whether `annotate` noted the row above its ceiling."""
    return ABOVE in row.notes


def recalibration_note(c: Ceilings) -> str:
    """The run's note, said once when a row ran above its ceiling."""
    return (
        f"% ceiling: rows ran faster than the ceiling of their mix (measured {c.measured}) "
        "by more than its spread (their notes say by how much): a ceiling a kernel beats is "
        f"not a ceiling; measure them again: `{RECALIBRATE}` (with `--size N`, over arrays "
        "as large as those rows')"
    )


def annotate(row: ResultRow, c: Ceilings | None, device: DeviceInfo) -> ResultRow:
    """The row with its `% ceiling`, and the note `above` gives against `c` (a note against
    earlier ceilings replaced), once however often it is annotated."""
    value = pct_ceiling(row, c)
    if value is None:
        return row
    note = above(row, c, device)
    kept = [n for n in row.notes.split("; ") if n and not n.startswith(ABOVE)] if row.notes else []
    return dataclasses.replace(row, pct_ceiling=value, notes="; ".join([*kept, note] if note else kept))


RAISED = "% ceiling: the {mix} ceiling raised to "  # how a raised mix's run note starts


def raised(c: Ceilings | None, row: ResultRow, device: DeviceInfo) -> tuple[str, Ceilings] | None:
    """(the mix, the ceilings with that mix's ceiling raised to the row) for a correct row that
    moves exactly one mix over at least the calibration's arrays (`mix_of`: never a small row
    the L2 serves) faster than that mix's ceiling; None for any other row. `by` names the row
    and its spread becomes the mix's."""
    mix = mix_of(row, device) if c is not None else None
    if c is None or mix is None or (row.gbps or 0.0) <= getattr(c, f"{mix}_gbps"):
        return None
    mine = f"{_by(mix, row)} (a run's row)"
    by = tuple(mine if b.startswith(f"{mix}: ") else b for b in c.by)
    by = by if mine in by else (*by, mine)
    changes: dict[str, Any] = {f"{mix}_gbps": row.gbps, f"{mix}_spread": row.spread, "by": by}
    return mix, dataclasses.replace(c, **changes)


def raised_note(mix: str, before: float, row: ResultRow) -> str:
    """The run's note for a mix whose ceiling a row of the run raised (one a mix: the last)."""
    return (
        f"{RAISED.format(mix=mix)}{row.gbps or 0.0:,.0f} GB/s by {row.op} {row.label} {row.shape} "
        f"{row.dtype}, faster than the measured {before:,.0f} GB/s over arrays of {L2_MULTIPLE}x the "
        "L2: larger arrays move faster, and a ceiling a row beats is not a ceiling; measured at that "
        f"size: `{RECALIBRATE} --size {row.shape}`"
    )


def _by(mix: str, r: ResultRow) -> str:
    """`read: stream_read vec4[UNROLL=4]`; a row of another op names its shape and dtype."""
    where = "" if r.op == MIX_OPS[mix] else f" {r.shape} {r.dtype}"
    return f"{mix}: {r.op} {r.label}{where}"


def from_rows(rows: Iterable[ResultRow], device: DeviceInfo, measured: str, source: str = "") -> Ceilings:
    """The ceilings a measurement's rows set: of each mix, the fastest correct row of all the
    rows that move it at the calibration size (`mix_of`: the stream ops' variants and library
    references, and any other op's rows); the best FMA rate; the launch floor."""
    rows = [r for r in rows if r.status is Status.OK]
    best: dict[str, ResultRow] = {}
    for mix, op in MIX_OPS.items():
        mine = [r for r in rows if mix_of(r, device) == mix]
        if not mine:
            raise CeilingsError(
                f"no correct row of {op} (nor of another op moving the {mix} mix "
                f"over arrays of {L2_MULTIPLE}x the L2): the {mix} ceiling was "
                "not measured"
            )
        best[mix] = max(mine, key=lambda r: r.gbps or 0.0)
    fma = max((r for r in rows if r.op == "fma" and r.gflops), key=lambda r: r.gflops or 0.0, default=None)
    floors = sorted(r.floor_us for r in rows if r.floor_us)
    by = [_by(mix, r) for mix, r in best.items()]
    if fma is not None:
        by.append(f"fma: fma {fma.label}")
    return Ceilings(
        gpu=device.name,
        driver=device.driver_version,
        memory_clock_mhz=round(device.memory_clock_mhz, 1),
        measured=measured,
        **{f"{mix}_gbps": float(best[mix].gbps or 0.0) for mix in MIX_OPS},
        read_spread=best["read"].spread,
        write_spread=best["write"].spread,
        copy_spread=best["copy"].spread,
        triad_spread=best["triad"].spread,
        fma_gflops=fma.gflops if fma is not None else None,
        floor_us=floors[len(floors) // 2] if floors else None,
        by=tuple(by),
        source=source,
    )


# ---------------------------------------------------------------- the file


def load(path: Path | None) -> list[Ceilings]:
    """The kept ceilings ([] when there is no file); CeilingsError for a bad one."""
    if path is None or not path.exists():
        return []
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or not isinstance(document.get("ceilings"), list):
            raise SchemaError('expected {"ceilings": [...]}')
        return [read_record(Ceilings, item, f"ceilings[{i}]") for i, item in enumerate(document["ceilings"])]
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
    return (
        f"the {device.name}'s ceilings were measured with driver {e.driver} at "
        f"{e.memory_clock_mhz:g} MHz memory; now driver {device.driver_version} at "
        f"{device.memory_clock_mhz:g} MHz"
    )


def save(entry: Ceilings, path: Path) -> None:
    """Keep `entry`, replacing one of the same key; the file is rewritten atomically."""
    entries = [
        e
        for e in load(path)
        if (e.gpu, e.driver, e.memory_clock_mhz) != (entry.gpu, entry.driver, entry.memory_clock_mhz)
    ]
    entries.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"ceilings": [dataclasses.asdict(e) for e in entries]}, indent=1)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text + "\n")
    os.replace(tmp, path)
