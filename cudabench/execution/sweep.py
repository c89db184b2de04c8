"""A sweep: jobs run on an executor in one round (`run`, `profile`, the API) or several
(`tune`'s rounds), every row handed to the sweep's sinks as it ends (sinks.py: the results
files rewritten, the row written to the history database, progress told), after the derived
columns are filled in here (the speedups over the job's baselines, `% ceiling`); the finished
rows kept when the sweep is cut short.

The session (session.py) makes the one Sweep of a command; nothing here prints or exits: a
sweep cut short raises `Interrupted` or `SweepFailed` after saving.
"""

from __future__ import annotations

import collections
import dataclasses
import shlex
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cudabench.core.errors import SweepError
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Ceilings, ResultRow, RunMeta, Status
from cudabench.execution.parts import Spans, balance_note, in_job_order, split
from cudabench.execution.pool import PoolError
from cudabench.execution.sinks import HistoryRecord, Listener, Progress, ResultsFiles, Sink
from cudabench.measure import telemetry
from cudabench.measure.runner import CaseJob, job_failed
from cudabench.ops.protocol import in_place_input
from cudabench.record import ceilings
from cudabench.record.history import History, HistoryError
from cudabench.record.stems import stem_file

if TYPE_CHECKING:
    from cudabench.execution.executors import Executor, Ready

__all__ = [
    "Interrupted",
    "MANY_ROWS_SAVE_S",
    "Listener",
    "Sink",
    "Sweep",
    "SweepError",
    "SweepFailed",
    "with_speedups",
]

# The results files of a command of hundreds of small rows (verify, tune): rewritten at most
# this often and the history database written at the end (Sweep.save_every_s); `run` keeps
# every row as it ends
MANY_ROWS_SAVE_S = 2.0


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


def with_speedups(
    rows: list[ResultRow], baselines: tuple[str, ...], divide_by_us: float | None = None
) -> list[ResultRow]:
    """Speedup over the first baseline that timed OK (baseline time / row time), or over
    `divide_by_us` where given (a job timed apart from its case's first baseline)."""
    base = divide_by_us or next((r.time_us for r in rows if r.variant in baselines and r.time_us), None)
    if base is None:
        return rows
    return [dataclasses.replace(r, speedup=base / r.time_us) if r.time_us else r for r in rows]


def baselines_fail_note(rows: list[ResultRow], job: CaseJob) -> str:
    """When every library baseline of a case FAILs: with a kernel failing too, the tolerance
    is the likely culprit, not the kernels (the note gives the command that shows how it was
    made); with the kernels passing at the same tolerance, it is the library's own arithmetic
    (a 16-bit sum accumulated in 16 bits), and the note says the kernels' verdicts stand."""
    library = [r for r in rows if r.is_baseline]
    if not library or any(r.status is not Status.FAIL for r in library):
        return ""
    case = job.case
    names = ", ".join(r.variant for r in library)
    kernels = [r for r in rows if not r.is_baseline]
    passing = any(r.status is Status.OK for r in kernels)
    if passing and not any(r.status is Status.FAIL for r in kernels):
        why = " (a sum accumulated in 16 bits, say)" if case.dtype in ("float16", "bfloat16") else ""
        return (
            f"{case.op} {case.shape_text} {case.dtype}: every library baseline FAILs ({names}) "
            f"where the kernels pass at the same tolerance: the library's own arithmetic{why}, "
            "not the kernels; a baseline's FAIL fails no run"
        )
    ops = ""
    if job.op_file and Path(job.op_file).resolve().parent.parent != BUILTIN_KERNELS.resolve():
        ops = f" --ops {shlex.quote(str(Path(job.op_file).resolve().parent.parent))}"
    dtype = f" -d {case.dtype}" if case.dtype != "float32" else ""
    too = " too" if kernels else ""
    return (
        f"{case.op} {case.shape_text} {case.dtype}: every library baseline FAILs{too} "
        f"({names}): the tolerance is the likely culprit, not the "
        f"kernels; see how it is made: cudabench tolerance {case.op} -s {case.shape_text}{dtype}{ops}"
    )


class Sweep:
    """Jobs run on one executor in one round (`run`, `profile`, the API) or several (`tune`:
    its strategy asks for more after each), every row handed to the sweep's sinks as it ends
    (sinks.py: the results files, the history database, progress). Ctrl-C hands the
    finished rows over (marked incomplete) and raises Interrupted; a pool that cannot go on,
    SweepFailed. `finish()` marks the run complete. The derived columns (speedups, `% ceiling`)
    are filled here and nowhere else."""

    def __init__(self, executor: Executor, stem: Path, meta: RunMeta, sinks: list[Sink]) -> None:
        self.executor, self.stem, self.meta, self.sinks = executor, stem, meta, sinks
        self.jobs: list[CaseJob] = []
        self._measured = meta.ceilings  # the ceilings the run started with (a row may raise them)
        self._done: dict[int, list[ResultRow]] = {}  # finished jobs, derived columns filled in
        self._pending: dict[int, list[ResultRow]] = collections.defaultdict(list)
        self._progress = next((s for s in sinks if isinstance(s, Progress)), None)
        self._spans: Spans = {}  # each GPU's rows: the first one's start, the last one's end

    @classmethod
    def recorded(
        cls,
        executor: Executor,
        stem: Path,
        meta: RunMeta,
        listener: Listener | None = None,
        history: History | None = None,
        tag: str = "",
    ) -> Sweep:
        """A sweep whose rows go to the results files at `stem`, the history database (when
        one is given, under `tag`) and `listener`."""
        sinks: list[Sink] = [ResultsFiles(stem)]
        if history is not None:
            sinks.append(HistoryRecord(history, tag))
        sinks.append(Progress(listener))
        return cls(executor, stem, meta, sinks)

    @property
    def listener(self) -> Listener | None:
        """Who hears of each case started and row ended (the Progress sink's listener)."""
        return self._progress.listener if self._progress is not None else None

    @listener.setter
    def listener(self, listener: Listener | None) -> None:
        if self._progress is None:
            self._progress = Progress()
            self.sinks.append(self._progress)
        self._progress.listener = listener

    @property
    def save_every_s(self) -> float:
        """0: each row kept as it ends; more (verify's many small rows): the results files
        rewritten at most this often and the database written at the end, both complete
        then, and when the sweep is cut short."""
        return max((s.every_s for s in self.sinks if isinstance(s, ResultsFiles)), default=0.0)

    @save_every_s.setter
    def save_every_s(self, seconds: float) -> None:
        for sink in self.sinks:
            if isinstance(sink, ResultsFiles):
                sink.every_s = seconds
            elif isinstance(sink, HistoryRecord):
                sink.at_end = seconds > 0

    @property
    def history_error(self) -> str:
        """A sink's trouble that did not end the run (the history database's), '' if none."""
        return "; ".join(s.problem for s in self.sinks if s.problem)

    @property
    def rows(self) -> list[ResultRow]:
        """Every row so far, in job order."""
        return [r for i in range(len(self.jobs)) for r in self._done.get(i, self._pending.get(i, []))]

    def save(self) -> None:
        """Hand the rows as they stand to the sinks (the run not yet complete)."""
        for sink in self.sinks:
            sink.cut_short(self.meta, self.rows)

    def finish(self, rows: list[ResultRow] | None = None) -> tuple[Path, Path]:
        """Mark the run complete: the sinks get the final rows (with `rows`, e.g. after ncu's
        metrics were joined). Returns the CSV and JSON paths."""
        self.meta = dataclasses.replace(self.meta, complete=True)
        rows = self.rows if rows is None else [self.with_ceiling(r) for r in rows]
        self._note(balance_note(rows, self._spans))  # several GPUs: how even their work was
        for sink in self.sinks:
            sink.finish(self.meta, rows)
        return stem_file(self.stem, ".csv"), stem_file(self.stem, ".json")

    def derive(self, rows: list[ResultRow], job: CaseJob) -> list[ResultRow]:
        """The derived columns of a finished job's rows, filled here and nowhere else: each
        kernel row's speedup over the job's baseline, and each row's `% ceiling` (with its
        note when above the ceiling: `with_ceiling`)."""
        rows = with_speedups(rows, job.baselines, job.divide_by_us)
        if job.divide_by_us is None:  # a job timed apart holds only some of its case's baselines
            self._note(baselines_fail_note(rows, job))
        return [self.with_ceiling(r) for r in rows]

    def with_ceiling(self, row: ResultRow) -> ResultRow:
        """The row's `% ceiling` (ceilings.annotate), with its note when it ran above its
        ceiling by more than that ceiling's spread; the first such row adds the run's note
        asking for a recalibration (once). A row that moves exactly a mix at the calibration
        size or more, faster than its ceiling, raises that ceiling for the run first
        (ceilings.raised): the rows so far are measured again against it."""
        up = ceilings.raised(self.meta.ceilings, row, self.meta.device)
        if up is not None:
            self._raise(up[0], up[1], row)
        c = self.meta.ceilings
        row = ceilings.annotate(row, c, self.meta.device)
        if c is not None and ceilings.flagged(row):
            self._note(ceilings.recalibration_note(c))
        return row

    def _raise(self, mix: str, raised: Ceilings, row: ResultRow) -> None:
        """The run's ceilings with `mix` raised to `row`, its note (one a mix), and the rows so
        far annotated again (a row flagged above the old ceiling may no longer be)."""
        first = self._measured or raised
        before: float = getattr(first, f"{mix}_gbps")
        prefix = ceilings.RAISED.format(mix=mix)
        notes = tuple(n for n in self.meta.notes if not n.startswith(prefix))
        self.meta = dataclasses.replace(
            self.meta, ceilings=raised, notes=(*notes, ceilings.raised_note(mix, before, row))
        )
        device = self.meta.device
        for rows in (self._done, self._pending):
            for index in list(rows):
                rows[index] = [ceilings.annotate(r, raised, device) for r in rows[index]]
        if not any(ceilings.flagged(r) for r in self.rows):  # the request no longer stands
            asked = ceilings.recalibration_note(raised)
            self.meta = dataclasses.replace(self.meta, notes=tuple(n for n in self.meta.notes if n != asked))

    def note_energy(self, row: ResultRow, job: CaseJob) -> None:
        """The run's one note on why an OK row asked for its energy has none (in place, cold,
        no NVML, a counter that did not move)."""
        if job.timing.energy and row.energy_mj is None:
            in_place = in_place_input(job.op()) is not None
            self._note(telemetry.missing_energy_note(row, job.timing, in_place))

    def _past_seconds(self, part: CaseJob) -> float | None:
        """The seconds the part's rows took last time on this GPU model, from the history
        database (None when it lacks one of them, or there is none): parts.split's estimate."""
        history = next((s.history for s in self.sinks if isinstance(s, HistoryRecord)), None)
        if history is None:
            return None
        keys = [row.key for row in job_failed(part, Status.ERROR, "")]
        try:
            found = history.work_seconds(keys, self.meta.device.name)
        except (sqlite3.Error, HistoryError):  # an estimate only: the sweep goes on without
            return None
        return sum(found.values()) if len(found) == len(keys) else None

    def _span(self, row: ResultRow) -> None:
        """Widen the row's GPU's span to hold it: on the parent's clock, the row ended when
        it was heard (now) and began its set-up and timing before that."""
        if row.device is None:
            return
        now = time.monotonic()
        began = now - (row.setup_s or 0) - (row.measure_s or 0)
        key = (row.host or "", row.device)
        first, last = self._spans.get(key, (began, now))
        self._spans[key] = (min(first, began), max(last, now))

    def _note(self, note: str) -> None:
        if note and note not in self.meta.notes:
            self.meta = dataclasses.replace(self.meta, notes=(*self.meta.notes, note))

    def run(
        self, jobs: list[CaseJob], ready: Ready | None = None, whole: bool = False
    ) -> list[list[ResultRow]]:
        """Run a round of jobs; returns each job's rows (in the jobs' order). On several GPUs
        the jobs go out cut into parts, the longest first (parts.py), unless `whole` (tune's
        rounds: jobs of a few configurations each, already as many as the GPUs need; a
        configuration alone a job costs the parent a round trip each, 7 ms on two H200s);
        a job's derived columns are filled once all its parts are in."""
        offset = len(self.jobs)
        self.jobs += jobs
        outer = self
        cuts = self.executor.cuts_jobs and not whole
        coming = getattr(self.executor, "coming", lambda: ())  # the libraries of the pool's successors
        later = frozenset(coming()) if cuts else frozenset[str]()
        parts = split(jobs, len(self.executor.devices) if cuts else 1, self._past_seconds, later)
        arrived: dict[int, list[ResultRow]] = collections.defaultdict(list)
        left = list(parts.count)

        class Events:
            def started(self, case: Case, name: str, device: int) -> None:
                for sink in outer.sinks:
                    sink.started(case, name, device)

            def row(self, part: int, row: ResultRow) -> None:
                index = offset + parts.owner[part]
                row = outer.with_ceiling(row)
                outer._span(row)
                outer.note_energy(row, outer.jobs[index])
                outer._pending[index].append(row)
                rows = outer.rows
                for sink in outer.sinks:  # every row kept as it ends
                    sink.row(outer.meta, rows, row)

            def job_done(self, part: int, finished: list[ResultRow]) -> None:
                owner = parts.owner[part]
                arrived[owner] += finished
                left[owner] -= 1
                if left[owner]:
                    return
                job = outer.jobs[offset + owner]
                finished = outer.derive(in_job_order(arrived.pop(owner), job), job)
                outer._done[offset + owner] = finished
                outer._pending.pop(offset + owner, None)
                rows = outer.rows
                for sink in outer.sinks:
                    sink.job_done(outer.meta, rows, finished)

        def part_ready(part: int) -> None:
            if ready is not None:
                ready(parts.owner[part])

        try:
            self.executor.execute(parts.jobs, Events(), part_ready if ready is not None else None)
        except KeyboardInterrupt:
            self.save()  # complete: false
            raise Interrupted(self.rows, stem_file(self.stem, ".json")) from None
        except PoolError as exc:
            self.save()
            raise SweepFailed(str(exc), self.rows, stem_file(self.stem, ".json")) from None
        return [self._done.get(offset + i, []) for i in range(len(jobs))]
