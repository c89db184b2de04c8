"""Where a sweep's rows go as they end: its sinks. A sweep (sweep.py) owns the rows and
their derived columns; each sink keeps or shows them its own way, and the sweep calls them
all alike:

    ResultsFiles   results/<stem>.csv and .json, rewritten after every row (marked
                   incomplete until `finish`), so Ctrl-C or a dead worker loses nothing
    HistoryRecord  the history database: the run added on its first row, a row a
                   transaction, the final metadata at `finish`; a database that fails mid-run
                   is closed and its error kept (`problem`), and the run goes on
    Progress       a listener (the CLI's progress bar, a test's): a case started, a row ended

A sink that raises stops the sweep as any error would; one that can fail without ending the
run (the database) keeps its trouble in `problem` instead.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Protocol

from cudabench.core.records import Case, ResultRow, RunMeta
from cudabench.record.history import History, HistoryError
from cudabench.record.rowcache import RowCache
from cudabench.record.stems import release_stem


class Listener(Protocol):
    """What a sweep tells its caller besides saving: a case started, a row ended."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def finished(self, row: ResultRow) -> None: ...


class Sink(Protocol):
    """One place a sweep's rows go. `rows` is every row so far, in job order."""

    problem: str  # trouble that did not end the run ('' when none)

    def started(self, case: Case, name: str, device: int) -> None:
        """A variant or baseline of `case` started on `device`."""

    def row(self, meta: RunMeta, rows: list[ResultRow], row: ResultRow) -> None:
        """`row` ended (its `% ceiling` filled, not yet its speedup)."""

    def job_done(self, meta: RunMeta, rows: list[ResultRow], finished: list[ResultRow]) -> None:
        """A job's rows are all in, their speedups filled."""

    def finish(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        """The run is complete (`meta.complete`): the final rows."""

    def cut_short(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        """The sweep stops early (Ctrl-C, a pool that cannot go on): keep what is there."""


class ResultsFiles:
    """The results files of a run: its CSV and JSON at `stem`, rewritten after every row."""

    def __init__(self, stem: Path, every_s: float = 0.0) -> None:
        self.stem = stem
        self.problem = ""
        self.paths: tuple[Path, Path] | None = None
        # 0: rewritten as each row ends; verify's many small rows: at most this often (the
        # rewrite of every row is quadratic), and always at the end or when cut short
        self.every_s = every_s
        self._saved_at = 0.0
        self._files = RowCache()  # each row's CSV line and JSON text made once, not at every rewrite

    def started(self, case: Case, name: str, device: int) -> None:
        pass

    def _save(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        if self.every_s and time.monotonic() - self._saved_at < self.every_s:
            return
        self._files.write(self.stem, meta, rows)
        self._saved_at = time.monotonic()

    def row(self, meta: RunMeta, rows: list[ResultRow], row: ResultRow) -> None:
        self._save(meta, rows)

    def job_done(self, meta: RunMeta, rows: list[ResultRow], finished: list[ResultRow]) -> None:
        self._save(meta, rows)

    def finish(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        self.paths = self._files.write(self.stem, meta, rows)
        release_stem(self.stem)  # the run is over: its name is free again (claim_stem)

    def cut_short(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        self._files.write(self.stem, meta, rows)  # complete: false
        release_stem(self.stem)  # the sweep ends here: its name is free again


class HistoryRecord:
    """The run in the history database: added with its first row, each row as it ends (again
    with its speedup when its job is done), the final metadata at the end."""

    def __init__(self, history: History, tag: str = "", at_end: bool = False) -> None:
        self.history: History | None = history
        self.tag = tag
        self.problem = ""
        self.run_id: int | None = None
        self.at_end = at_end  # every row at the end (or when cut short), not one by one

    def _record(self, meta: RunMeta, rows: list[ResultRow], final: bool = False) -> None:
        if self.history is None:
            return
        try:
            if self.run_id is None:
                self.run_id = self.history.add_run(meta, self.tag)
            for row in rows:
                self.history.add_row(self.run_id, row)
            if final:
                self.history.finish_run(self.run_id, meta)
        except (sqlite3.Error, HistoryError) as exc:
            self.problem = f"history database {self.history.path}: {exc}; the run goes on"
            self.history.close()
            self.history = None

    def started(self, case: Case, name: str, device: int) -> None:
        pass

    def row(self, meta: RunMeta, rows: list[ResultRow], row: ResultRow) -> None:
        if not self.at_end:
            self._record(meta, [row])

    def job_done(self, meta: RunMeta, rows: list[ResultRow], finished: list[ResultRow]) -> None:
        if not self.at_end:
            self._record(meta, finished)  # with their speedups now

    def finish(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        self._record(meta, rows, final=True)

    def cut_short(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        if self.at_end:  # one by one, each row would be in already
            self._record(meta, rows)  # the run stays marked incomplete


class Progress:
    """A listener told of each case started and each row ended; `listener` may be swapped
    (the CLI shows the ceilings' measurement and the run on two progress bars)."""

    def __init__(self, listener: Listener | None = None) -> None:
        self.listener = listener
        self.problem = ""

    def started(self, case: Case, name: str, device: int) -> None:
        if self.listener is not None:
            self.listener.started(case, name, device)

    def row(self, meta: RunMeta, rows: list[ResultRow], row: ResultRow) -> None:
        if self.listener is not None:
            self.listener.finished(row)

    def job_done(self, meta: RunMeta, rows: list[ResultRow], finished: list[ResultRow]) -> None:
        pass

    def finish(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        pass

    def cut_short(self, meta: RunMeta, rows: list[ResultRow]) -> None:
        pass
