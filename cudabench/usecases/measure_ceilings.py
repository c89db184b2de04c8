"""Ceilings: what this GPU can actually move in each traffic mix and its fp32 FMA rate,
measured (execution/calibration.py) or the kept ones shown, for `run`'s `% ceiling` column.
`cudabench ceilings` and `cudabench.api.ceilings` are this call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.core.errors import UsageError
from cudabench.core.records import Ceilings, DeviceInfo, ResultRow
from cudabench.core.timing import TimingOptions
from cudabench.execution.session import Session
from cudabench.record import ceilings
from cudabench.record.stems import stem_file
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Failed, Placement
from cudabench.usecases.observe import Observer, Silent

__all__ = ["CeilingsRequest", "CeilingsResult", "measure_ceilings"]


@dataclass(frozen=True)
class CeilingsRequest:
    """Which GPU (`device`), and how: `recalibrate` measures even when this GPU model,
    driver and memory clock have ceilings kept; `size` the float32 elements per array of the
    stream ops (default 8x the L2 size); `timing` changes TimingOptions fields (min_samples,
    min_time_s, max_time_s, warmup); `output`/`force` as for run."""

    device: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    recalibrate: bool = False
    size: int | None = None
    timing: Mapping[str, object] = field(default_factory=dict)
    output: Path | None = None
    force: bool = False
    command: str = "cudabench ceilings"


@dataclass(frozen=True)
class CeilingsResult:
    """The GPU's ceilings (`entry`), kept in `kept_in`; with `rows` and the files of the
    measurement when they were measured now (None: the kept ones were shown)."""

    entry: Ceilings
    info: DeviceInfo
    kept_in: Path
    rows: list[ResultRow] | None = None
    csv_path: Path | None = None
    json_path: Path | None = None

    @property
    def measured(self) -> bool:
        return self.rows is not None


def measure_ceilings(request: CeilingsRequest, observer: Observer | None = None) -> CeilingsResult:
    """The kept ceilings of this GPU, or (none kept, stale, `recalibrate` or a `size` given)
    measured now on it. UsageError: the ceilings file is off or unreadable, no GPU; Failed:
    a mix got no correct row (its rows are saved)."""
    observer = observer or Silent()
    changes = {k: v for k, v in request.timing.items() if v is not None}
    timing = dataclasses.replace(TimingOptions(), **changes)  # type: ignore[arg-type]
    path = ceilings.cache_path()
    if path is None:
        raise UsageError("CUDABENCH_CEILINGS is off: nowhere to keep the ceilings (unset it, or give a file)")
    try:
        kept = ceilings.load(path)
    except ceilings.CeilingsError as exc:
        raise UsageError(f"{exc} (move it away, or set CUDABENCH_CEILINGS to another file)") from None
    with Session.open(Placement((request.device,), request.timeout_s).where) as session:
        info = session.info
        entry = ceilings.lookup(kept, info)
        if entry is not None and not request.recalibrate and request.size is None:
            return CeilingsResult(entry, info, path)
        why = ceilings.stale(kept, info)
        if why:
            observer.note(f"{why}: measuring again")
        with observer.progress(None, 1) as bar:
            try:
                entry, done = session.calibrate(
                    request.size, request.output, bar, request.command, timing, force=request.force
                )
            except ceilings.CeilingsError as exc:  # a mix without a correct row
                raise Failed(str(exc)) from None
    return CeilingsResult(
        entry, info, path, done.rows, stem_file(done.stem, ".csv"), stem_file(done.stem, ".json")
    )
