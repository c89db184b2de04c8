"""The tuning file: the best configuration `cudabench tune` found, per (GPU model, op, variant,
dtype, shape), which `run` uses by default.

    results/tuning.json  ($CUDABENCH_TUNING to put it elsewhere)
    {"format_version": 1, "entries": [{"gpu": "NVIDIA H100 80GB HBM3", "op": "reduce",
      "variant": "float4", "dtype": "float32", "shape": "16777216",
      "params": {"BLOCK": 512, ...}, "time_us": 21.3, "default_time_us": 23.9, ...}]}

An entry is replaced when the same key is tuned again; other entries are kept. The file is
read through the same validating reader as results files (schema.py), so a hand-edited
file gives one line naming the entry and field.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cudabench.record.results import atomic_write
from cudabench.record.schema import SchemaError, read_record
from cudabench.record.stems import RESULTS_DIR

FORMAT_VERSION = 1


class TuningError(ValueError):
    """A tuning file that cannot be read or written; one line naming it."""


@dataclass(frozen=True)
class TunedEntry:
    gpu: str  # DeviceInfo.name: a configuration is only trusted on the GPU model it won on
    op: str
    variant: str
    dtype: str
    shape: str
    params: dict[str, int]
    time_us: float  # the winner's median in the final, interleaved round
    default_time_us: float | None = None  # the header's default configuration, same round
    strategy: str = ""
    tuned_at: str = ""  # ISO 8601, UTC
    results: str = ""  # the results file with every configuration's row
    ties: tuple[str, ...] = field(default=())  # configurations within the noise of the best

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.gpu, self.op, self.variant, self.dtype, self.shape)


def tuning_path() -> Path:
    return Path(os.environ.get("CUDABENCH_TUNING", RESULTS_DIR / "tuning.json"))


def load(path: Path | None = None) -> list[TunedEntry]:
    """The entries of the tuning file (none when there is no file)."""
    path = path or tuning_path()
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TuningError(f"{path}: not a tuning file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format_version") != FORMAT_VERSION:
        raise TuningError(f"{path}: not a cudabench tuning file (format_version {FORMAT_VERSION} expected)")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise TuningError(f"{path}: entries: expected a list")
    try:
        found = [read_record(TunedEntry, raw, f"entries[{i}]") for i, raw in enumerate(entries)]
    except SchemaError as exc:
        raise TuningError(f"{path}: {exc}") from None
    return found


def save(entry: TunedEntry, path: Path | None = None) -> Path:
    """Add or replace the entry of its key; returns the file written."""
    path = path or tuning_path()
    kept = [e for e in load(path) if e.key != entry.key]
    entries = sorted([*kept, entry], key=lambda e: e.key)
    doc = {"format_version": FORMAT_VERSION, "entries": [asdict(e) for e in entries]}
    try:
        atomic_write(path, json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        raise TuningError(f"{path}: cannot write ({exc.strerror})") from None
    return path


def lookup(
    entries: list[TunedEntry], gpu: str, op: str, variant: str, dtype: str, shape: str
) -> TunedEntry | None:
    key = (gpu, op, variant, dtype, shape)
    return next((e for e in entries if e.key == key), None)
