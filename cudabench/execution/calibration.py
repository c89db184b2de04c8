"""The ceilings a run's `% ceiling` column needs, measured on the session's own executor.

`calibrate` measures this GPU's ceilings (ceilings.py does the arithmetic and keeps the file):
each stream op over arrays of 8x the L2 size at a few configurations, with its library
references; at the same size the library references of the catalogue ops that move a mix
(ceilings.MIX_REFERENCES: reduce's sums, add, relu), so that no library the catalogue times
moves a mix faster than its ceiling; and the FMA op, as a run of their own
(results/<time>_ceilings.*). Each mix's ceiling is the best of all those rows. `use_ceilings`
finds the ceilings a run uses — kept in the ceilings file, recorded in the history database,
or measured now — and says which in a note on the run's metadata.

The fake backend (no GPU) never measures them on its own: a run on it without kept ceilings
has no `% ceiling` column and a note saying why (its stream ops over 8x its 60 MiB L2 would
compute a NumPy reference of 500 MB arrays at every launch: the docs' GPU-free example sat
there for minutes). `cudabench ceilings` on it measures its plumbing over small arrays only
(CUDABENCH_FAKE_L2, as the tests set).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cudabench.backends.fake import FAKE_CEILINGS_MAX_ELEMENTS, is_fake
from cudabench.core.errors import SweepError
from cudabench.core.records import Ceilings, DeviceInfo, RunMeta
from cudabench.core.timing import TimingOptions
from cudabench.execution.plan import plan
from cudabench.execution.sweep import Listener, Sweep
from cudabench.ops.space import grid
from cudabench.record import ceilings
from cudabench.record.history import History, HistoryError
from cudabench.record.stems import stem_file


class SweepMaker(Protocol):
    """What calibration needs of a session (session.Session): the GPU, and a sweep of its own
    on the session's executor."""

    @property
    def info(self) -> DeviceInfo: ...

    def new_sweep(
        self,
        label: str,
        timing: TimingOptions,
        command: str,
        *,
        output: Path | None = None,
        listener: Listener | None = None,
        started: str | None = None,
        force: bool = False,
    ) -> Sweep: ...


def calibrate(
    session: SweepMaker,
    size: int | None = None,
    output: Path | None = None,
    listener: Listener | None = None,
    command: str = "cudabench ceilings",
    timing: TimingOptions | None = None,
    started: str | None = None,
    force: bool = False,
) -> tuple[Ceilings, Sweep]:
    """Measure this GPU's ceilings on the session's executor, timed as `timing` says (hot, by
    events, whatever it asks of those: the ceilings are DRAM rates). Returns the ceilings (kept
    in the ceilings file unless $CUDABENCH_CEILINGS is off) and the finished Sweep. SweepError
    for a bad size; ceilings.CeilingsError (the rows saved) for a mix left without a correct
    row."""
    try:
        n = ceilings.array_elements(session.info, size)
    except ceilings.CeilingsError as exc:
        raise SweepError(str(exc)) from None
    if is_fake(session.info) and n > FAKE_CEILINGS_MAX_ELEMENTS:
        raise SweepError(
            f"the fake backend would emulate the ceilings' arrays of {n:,} floats (8x its "
            f"{session.info.l2_bytes / 2**20:g} MiB L2) at every launch: give it a small L2 "
            "(CUDABENCH_FAKE_L2=65536) to measure its plumbing; its numbers are no GPU's anyway"
        )
    options = dataclasses.asdict(
        dataclasses.replace(timing or TimingOptions(), cold=False, timer="events", interleave=False)
    )
    jobs = [job for op in ceilings.MIX_OPS.values() for job in plan(op, [(n,)], None, None, **options).jobs]
    jobs += plan("fma", [(ceilings.FMA_THREADS,)], None, None, **options).jobs
    # each variant at every configuration of its grid (ceilings.STREAM_GRIDS, FMA_GRID)
    jobs = [
        dataclasses.replace(
            job, variants=tuple(c for v in job.variants for c in grid(v, ceilings.variant_grid(v)))
        )
        for job in jobs
    ]
    # the library references of the ops that move a mix, at the same size: their rows alone
    jobs += [
        dataclasses.replace(job, variants=())
        for op in ceilings.MIX_REFERENCES.values()
        for job in plan(op, [(n,)], None, None, **options).jobs
        if job.baselines
    ]
    done = session.new_sweep(
        "ceilings", jobs[0].timing, command, output=output, listener=listener, started=started, force=force
    )
    done.run(jobs)
    json_path = stem_file(done.stem, ".json")
    try:
        found = ceilings.from_rows(done.rows, session.info, done.meta.started, str(json_path))
    except ceilings.CeilingsError as exc:
        done.finish()
        raise ceilings.CeilingsError(f"{exc} (rows in {json_path})") from None
    done.meta = dataclasses.replace(done.meta, ceilings=found)
    done.finish()
    path = ceilings.cache_path()
    if path is not None:
        ceilings.save(found, path)
    return found, done


FAKE_NOTE = (
    "none: the fake backend measures no ceilings on its own (no GPU: its times are scripted); "
    "`cudabench ceilings` measures its plumbing with CUDABENCH_FAKE_L2=65536"
)


def measures_fake_ceilings() -> bool:
    """Whether a run on the fake backend measures its ceilings first, as a run on a GPU does:
    never, but tests of that path on the fake make this True."""
    return False


def use_ceilings(
    session: SweepMaker,
    meta: RunMeta,
    recalibrate: bool = False,
    announce: Callable[[str], None] | None = None,
    listener: Listener | None = None,
    output: Path | None = None,
    history: History | None = None,
) -> RunMeta:
    """The run's metadata with the ceilings its `% ceiling` column uses, and a note saying
    which: the kept ones for this GPU model, driver and memory clock, or measured now on the
    session's executor (`announce` says so first; the rows in the folder `output`) when there
    are none, they are stale, or `recalibrate`. The history database, when open, is the second
    place they are kept: a run's metadata records the ceilings it used, so a file lost or
    moved does not mean measuring again. A measurement that leaves a mix without a correct
    row is a note and no column, not the end of the run. `meta` unchanged when the ceilings
    file is off; SweepError for an unreadable file."""
    path = ceilings.cache_path()
    if path is None:
        return meta
    info = meta.device
    try:
        entries = ceilings.load(path)
    except ceilings.CeilingsError as exc:
        raise SweepError(f"{exc} (move it away, or set CUDABENCH_CEILINGS=off)") from None

    def using(found: Ceilings | None, note: str) -> RunMeta:
        return dataclasses.replace(meta, ceilings=found, notes=(*meta.notes, f"% ceiling: {note}"))

    kept = None if recalibrate else ceilings.lookup(entries, info)
    if kept is not None:
        return using(kept, f"this GPU's ceilings from {path} (measured {kept.measured})")
    recorded = None
    if history is not None and not recalibrate:
        try:
            recorded = history.ceilings(ceilings.key_of(info))
        except (sqlite3.Error, HistoryError):  # the database's trouble is the run's to report
            recorded = None
    if history is not None and recorded is not None:
        ceilings.save(recorded, path)
        return using(
            recorded,
            f"this GPU's ceilings from the history database "
            f"{history.path} (measured {recorded.measured}), kept in {path}",
        )
    if is_fake(info) and not measures_fake_ceilings():
        return using(None, FAKE_NOTE)
    why = (
        "--recalibrate"
        if recalibrate
        else ceilings.stale(entries, info) or f"none kept for the {info.name} in {path}"
    )
    if announce is not None:
        announce(
            f"measuring this GPU's ceilings first ({why}; about 50 rows, once per GPU "
            "model, driver and memory clock; --no-ceilings skips it)"
        )
    try:
        _, done = calibrate(
            session, output=output, listener=listener, timing=meta.timing, started=meta.started
        )
    except ceilings.CeilingsError as exc:
        return using(None, f"not measured: {exc}")
    found = done.meta.ceilings
    return using(found, f"this GPU's ceilings measured now ({why}), rows in {stem_file(done.stem, '.json')}")
