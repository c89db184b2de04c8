"""A sweep: jobs run on an executor in one round (`run`, `profile`, the API) or several
(`tune`'s rounds), every row saved as it ends: derived columns filled in (the speedups over the
job's baselines, `% ceiling`), the results files rewritten, the row written to the history
database; the finished rows kept when the sweep is cut short.

The session (session.py) makes the one Sweep of a command; nothing here prints or exits: a
sweep cut short raises `Interrupted` or `SweepFailed` after saving.
"""

from __future__ import annotations

import collections
import dataclasses
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cudabench.core.errors import SweepError
from cudabench.core.records import Case, ResultRow, RunMeta
from cudabench.execution.pool import PoolError
from cudabench.measure import telemetry
from cudabench.measure.runner import CaseJob
from cudabench.ops.protocol import in_place_input
from cudabench.record import ceilings
from cudabench.record.history import History, HistoryError
from cudabench.record.results import release_stem, stem_file, write_results

if TYPE_CHECKING:
    from cudabench.execution.executors import Executor, Ready

__all__ = ["Interrupted", "Listener", "Sweep", "SweepError", "SweepFailed", "with_speedups"]


class Interrupted(Exception):
    """Ctrl-C during a sweep: the finished rows are saved (marked incomplete) in `path`."""

    def __init__(self, rows: list[ResultRow], path: Path) -> None:
        super().__init__(f"interrupted: {len(rows)} finished rows kept in {path}")
        self.rows, self.path = rows, path


class SweepFailed(Exception):
    """The sweep could not go on (a replacement worker would not start); rows are saved."""

    def __init__(self, reason: str, rows: list[ResultRow], path: Path) -> None:
        super().__init__(f"{reason}; the finished rows are kept in {path}")
        self.rows, self.path = rows, path


def with_speedups(rows: list[ResultRow], baselines: tuple[str, ...]) -> list[ResultRow]:
    """Speedup over the first baseline that timed OK (baseline time / row time)."""
    base = next((r for r in rows if r.variant in baselines and r.time_us), None)
    if base is None:
        return rows
    return [
        dataclasses.replace(r, speedup=base.time_us / r.time_us) if r.time_us else r  # type: ignore[operator]
        for r in rows
    ]


class Listener(Protocol):
    """What a sweep tells its caller besides saving: a case started, a row ended."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def finished(self, row: ResultRow) -> None: ...


class Sweep:
    """Jobs run on one executor in one round (`run`, `profile`, the API) or several (`tune`:
    its strategy asks for more after each), every row saved as it ends: the results files
    rewritten, and the row written to the history database (when one is given). Ctrl-C saves
    the finished rows (marked incomplete) and raises Interrupted; a pool that cannot go on,
    SweepFailed. `finish()` marks the run complete. A database that fails mid-run is closed
    and its error kept in `history_error`; the files go on being written."""

    def __init__(
        self,
        executor: Executor,
        stem: Path,
        meta: RunMeta,
        listener: Listener | None = None,
        history: History | None = None,
        tag: str = "",
    ) -> None:
        self.executor, self.stem, self.meta, self.listener = executor, stem, meta, listener
        self.history, self.tag = history, tag
        self.history_error = ""
        self.run_id: int | None = None
        self.jobs: list[CaseJob] = []
        self._done: dict[int, list[ResultRow]] = {}  # finished jobs, derived columns filled in
        self._pending: dict[int, list[ResultRow]] = collections.defaultdict(list)

    @property
    def rows(self) -> list[ResultRow]:
        """Every row so far, in job order."""
        return [r for i in range(len(self.jobs)) for r in self._done.get(i, self._pending.get(i, []))]

    def save(self) -> None:
        """The results files as they stand (the run not yet complete)."""
        write_results(self.stem, self.meta, self.rows)

    def _record(self, rows: list[ResultRow], meta: RunMeta | None = None) -> None:
        """Write rows (and, with `meta`, the run's final metadata) to the history database."""
        if self.history is None:
            return
        try:
            if self.run_id is None:
                self.run_id = self.history.add_run(self.meta, self.tag)
            for row in rows:
                self.history.add_row(self.run_id, row)
            if meta is not None:
                self.history.finish_run(self.run_id, meta)
        except (sqlite3.Error, HistoryError) as exc:
            self.history_error = f"history database {self.history.path}: {exc}; the run goes on"
            self.history.close()
            self.history = None

    def finish(self, rows: list[ResultRow] | None = None) -> tuple[Path, Path]:
        """Mark the run complete: the files rewritten (with `rows`, e.g. after ncu's metrics
        were joined), the database's rows and run updated. Returns the CSV and JSON paths."""
        self.meta = dataclasses.replace(self.meta, complete=True)
        rows = self.rows if rows is None else [self.with_ceiling(r) for r in rows]
        paths = write_results(self.stem, self.meta, rows)
        release_stem(self.stem)  # the run is over: its name is free (claim_stem)
        self._record(rows, self.meta)
        return paths

    def derive(self, rows: list[ResultRow], job: CaseJob) -> list[ResultRow]:
        """The derived columns of a finished job's rows, filled here and nowhere else: each
        kernel row's speedup over the job's baseline, and each row's `% ceiling` (with its
        note when above the ceiling: `with_ceiling`)."""
        rows = with_speedups(rows, job.baselines)
        return [self.with_ceiling(r) for r in rows]

    def with_ceiling(self, row: ResultRow) -> ResultRow:
        """The row's `% ceiling` (ceilings.annotate), with its note when it ran above its
        ceiling by more than that ceiling's spread; the first such row adds the run's note
        asking for a recalibration (once)."""
        c = self.meta.ceilings
        row = ceilings.annotate(row, c, self.meta.device)
        if c is not None and ceilings.flagged(row):
            self._note(ceilings.recalibration_note(c))
        return row

    def note_energy(self, row: ResultRow, job: CaseJob) -> None:
        """The run's one note on why an OK row asked for its energy has none (in place, cold,
        no NVML, a counter that did not move)."""
        if job.timing.energy and row.energy_mj is None:
            in_place = in_place_input(job.op()) is not None
            self._note(telemetry.missing_energy_note(row, job.timing, in_place))

    def _note(self, note: str) -> None:
        if note and note not in self.meta.notes:
            self.meta = dataclasses.replace(self.meta, notes=(*self.meta.notes, note))

    def run(self, jobs: list[CaseJob], ready: Ready | None = None) -> list[list[ResultRow]]:
        """Run a round of jobs; returns each job's rows (in the jobs' order)."""
        offset = len(self.jobs)
        self.jobs += jobs
        outer = self

        class Events:
            def started(self, case: Case, name: str, device: int) -> None:
                if outer.listener is not None:
                    outer.listener.started(case, name, device)

            def row(self, job_index: int, row: ResultRow) -> None:
                row = outer.with_ceiling(row)
                outer.note_energy(row, outer.jobs[offset + job_index])
                outer._pending[offset + job_index].append(row)
                outer.save()  # every row saved as it ends
                outer._record([row])
                if outer.listener is not None:
                    outer.listener.finished(row)

            def job_done(self, job_index: int, finished: list[ResultRow]) -> None:
                finished = outer.derive(finished, outer.jobs[offset + job_index])
                outer._done[offset + job_index] = finished
                outer._pending.pop(offset + job_index, None)
                outer.save()
                outer._record(finished)  # with their speedups now

        try:
            self.executor.execute(jobs, Events(), ready)
        except KeyboardInterrupt:
            self.save()  # complete: false
            release_stem(self.stem)
            raise Interrupted(self.rows, stem_file(self.stem, ".json")) from None
        except PoolError as exc:
            self.save()
            release_stem(self.stem)
            raise SweepFailed(str(exc), self.rows, stem_file(self.stem, ".json")) from None
        return [self._done.get(offset + i, []) for i in range(len(jobs))]
