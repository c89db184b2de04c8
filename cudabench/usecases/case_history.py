"""History: one case's rows across the runs of the history database, each judged against the
case's previous correct, timed row as compare judges two runs (the regression marks); and
importing older results files into the database. `cudabench history` / `cudabench import`
and `cudabench.api.history` are these calls."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from cudabench.core.errors import ResultsError, UsageError
from cudabench.core.names import UnknownName, did_you_mean
from cudabench.core.records import ResultRow, RowKey, RunMeta, Shape, Status
from cudabench.core.shapes import shape_text
from cudabench.ops.registry import get_op
from cudabench.record.compare import DEFAULT_THRESHOLD, Pair, Verdict, run_files, verdict_for
from cudabench.record.fingerprint import ALL, describe, differences
from cudabench.record.history import History, HistoryError, RunInfo, db_path
from cudabench.record.results import read_results

__all__ = [
    "CaseHistory",
    "CaseSeries",
    "HistoryEntry",
    "HistoryQuery",
    "ImportResult",
    "RunInfo",
    "case_history",
    "import_results",
    "marks",
]


@dataclass(frozen=True)
class HistoryQuery:
    """Which cases of `op`: one variant, shape, dtype (None: all recorded); on GPU model
    `gpu` (None: each case's newest run's model; 'all': every model); the newest `last` runs
    of each; `threshold` the smallest change worth a verdict; `allow_mismatch` judges across
    differing fingerprints (marked *); the database `db` (default results/cudabench.db)."""

    op: str
    variant: str | None = None
    shape: Shape | None = None
    dtype: str | None = None
    gpu: str | None = None
    last: int = 20
    threshold: float = DEFAULT_THRESHOLD
    allow_mismatch: bool = False
    db: Path | None = None


@dataclass(frozen=True)
class HistoryEntry:
    """A case's row in one run, and its mark: the verdict against the case's previous
    correct, timed row (a Pair: FASTER / SLOWER / SAME / UNSURE, NOT_COMPARABLE), its status
    when it has no time (FAIL, ...), or '' for the first."""

    run: RunInfo
    row: ResultRow
    mark: Pair | str

    @property
    def verdict(self) -> str:
        """The mark as a word: a Verdict's value, a status, or ''."""
        return self.mark if isinstance(self.mark, str) else self.mark.verdict.value

    @property
    def change(self) -> float | None:
        """median / the previous median - 1, where judged."""
        return None if isinstance(self.mark, str) else self.mark.change

    @property
    def mismatch(self) -> str:
        """Where this run's fingerprint differs from the previous one's ('' when it does not)."""
        return describe(self.mark.mismatch) if isinstance(self.mark, Pair) and self.mark.mismatch else ""

    @property
    def regressed(self) -> bool:
        """SLOWER than the run before."""
        return isinstance(self.mark, Pair) and self.mark.verdict is Verdict.SLOWER


@dataclass(frozen=True)
class CaseSeries:
    key: RowKey
    entries: list[HistoryEntry]


@dataclass(frozen=True)
class CaseHistory:
    """The cases asked, each with its rows oldest first, from the database `db`."""

    op: str
    db: Path
    series: list[CaseSeries]

    @property
    def regressions(self) -> list[tuple[RowKey, HistoryEntry]]:
        """Every entry marked SLOWER than the run before it."""
        return [(s.key, e) for s in self.series for e in s.entries if e.regressed]


def marks(
    found: list[tuple[RunInfo, ResultRow]], threshold: float, allow: Collection[str] = ()
) -> list[Pair | str]:
    """Each row's verdict against the previous correct, timed row of the case (compare's
    statistics: FASTER / SLOWER outside the noise, SAME, UNSURE; NOT_COMPARABLE where the
    two runs' fingerprints differ, unless `allow`ed), or its status change."""
    out: list[Pair | str] = []
    previous: tuple[RunInfo, ResultRow] | None = None
    for run, row in found:
        if previous is None:
            out.append("")
        elif row.status is not Status.OK or not row.time_us:
            out.append(row.status.value)
        else:
            mismatch = differences(previous[0].fingerprint, run.fingerprint)
            out.append(verdict_for(previous[1], row, threshold, mismatch, allow))
        if row.status is Status.OK and row.time_us:
            previous = (run, row)
    return out


def _open(db: Path | None, readonly: bool = False) -> History:
    try:
        return History(db, readonly=readonly).open()
    except HistoryError as exc:
        raise UsageError(str(exc)) from None


def _known(op: str, recorded: Sequence[str] = (), where: Path | None = None) -> None:
    """UsageError for an op neither the database (its `recorded` ops) nor the catalogue and
    your folders ($CUDABENCH_OPS) know. The database is the truth for the ops it holds: a
    user's own op needs no --ops here."""
    try:
        get_op(op)
    except UnknownName as exc:
        if not recorded:
            raise UsageError(str(exc)) from None
        near = did_you_mean(op, list(recorded))
        raise UsageError(f"unknown op {op!r}: {where} holds rows of {', '.join(recorded)}{near}") from None


def _cases(history: History, query: HistoryQuery) -> list[RowKey]:
    op, variant, shape, dtype = query.op, query.variant, query.shape, query.dtype
    keys = history.keys(op)
    recorded = sorted(set().union(*history.ops().values()))
    if not keys and recorded and op not in recorded:
        _known(op, recorded, history.path)
    if not keys and history.keys(op, checks=True):
        raise UsageError(
            f"no timed {op} rows in {history.path} yet, only verify's checks (untimed: they are "
            f"in the results/*_verify_{op}.json files); every `cudabench run` adds its rows"
        )
    if not keys:
        raise UsageError(
            f"no {op} rows in {history.path} yet (every `cudabench run` adds its rows; "
            "`cudabench import results/*.json` adds older runs)"
        )
    if variant is not None:
        names = sorted({k.variant for k in keys})
        if variant not in names:
            raise UsageError(
                f"no {op} rows of variant {variant!r} (recorded: {', '.join(names)})"
                f"{did_you_mean(variant, names)}"
            )
        keys = [k for k in keys if k.variant == variant]
    if shape is not None:
        text = shape_text(shape)
        shapes = sorted({k.shape for k in keys})
        if text not in shapes:
            raise UsageError(f"no {op} rows at shape {text} (recorded: {', '.join(shapes)})")
        keys = [k for k in keys if k.shape == text]
    if dtype is not None:
        keys = [k for k in keys if k.dtype == dtype]
        if not keys:
            raise UsageError(f"no {op} rows in {dtype} with those filters")
    return keys


def case_history(query: HistoryQuery) -> CaseHistory:
    """The cases' rows across runs, each marked against the one before. UsageError (one
    line): an unknown op, no database, no rows of those cases."""
    allow = {ALL} if query.allow_mismatch else set()
    gpu = None if query.gpu in (None, "all") else query.gpu
    series = []
    try:
        opened = History(query.db, readonly=True).open()
    except HistoryError as exc:
        _known(query.op)  # an op nobody knows is the likelier mistake: said first
        raise UsageError(str(exc)) from None
    with opened as history:
        for key in _cases(history, query):
            found = history.case_rows(key, gpu, query.last)
            if query.gpu is None and found:  # the newest run's GPU model: times across models mislead
                found = [f for f in found if f[0].gpu == found[-1][0].gpu]
            if found:
                entries = [
                    HistoryEntry(run, row, mark)
                    for (run, row), mark in zip(found, marks(found, query.threshold, allow))
                ]
                series.append(CaseSeries(key, entries))
    if not series:
        raise UsageError(f"no rows of those cases on GPU {query.gpu!r}")
    return CaseHistory(query.op, history.path, series)


@dataclass(frozen=True)
class ImportResult:
    """What an import did: runs and rows added to the database `db`, files already there
    (`skipped`), and the files that are not results files (`bad`: one line each)."""

    db: Path
    imported: int
    rows: int
    skipped: int
    bad: list[str]


def _results_in(path: Path) -> list[Path]:
    """A file as given; a folder's results files, oldest first (not its ceilings.json,
    tuning.json or history database)."""
    return [f.path for f in run_files(path)] if path.is_dir() else [path]


def import_results(files: Sequence[Path], tag: str = "", db: Path | None = None) -> ImportResult:
    """Add results files to the history database, each once: a file imported before is
    skipped unread, and one whose run the database recorded as it ran (the same start and
    command: every `cudabench run` does) is skipped too. A file that does not read is a
    line in `bad`, the others still import. No database is made until a file reads."""
    imported = skipped = rows_in = 0
    bad: list[str] = []
    paths = iter([found for given in files for found in _results_in(given)])
    first: tuple[Path, tuple[RunMeta, list[ResultRow]] | None] | None = None
    for path in paths:
        try:
            first = (path, read_results(path))
            break
        except ResultsError as exc:
            bad.append(str(exc))
    if first is None:
        return ImportResult(db_path(db), 0, 0, 0, bad)
    with _open(db) as history:
        for path, run in itertools.chain([first], ((p, None) for p in paths)):
            source = str(path.with_suffix(".json").resolve())
            if history.imported(source) is not None:
                skipped += 1
                continue
            try:
                meta, rows = run if run is not None else read_results(path)
            except ResultsError as exc:
                bad.append(str(exc))
                continue
            if history.find(meta) is not None:  # the run recorded itself as it ran
                skipped += 1
                continue
            history.import_run(meta, rows, source, tag)
            imported += 1
            rows_in += len(rows)
    return ImportResult(history.path, imported, rows_in, skipped, bad)
