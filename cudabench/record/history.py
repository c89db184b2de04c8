"""The history database: every run and its rows in SQLite, written as each row ends.

    results/cudabench.db   (--db PATH or $CUDABENCH_DB to move it)

Tables (schema version in `meta`, migrations in history_schema.py; history_db.py connects):

    runs(id, started, command, tag, git_sha, git_dirty, gpu, driver, timing_mode,
         cudabench_version, complete, source, meta_json, fingerprint)
    rows(run_id, op, variant, shape, dtype, params, status, time_us, spread, row_json)
         UNIQUE (run_id, op, variant, shape, dtype, params)

`meta_json` and `row_json` hold the run's metadata and the whole row (samples and ncu
metrics included) as the results file holds them, and are read back through the same
validating reader (results.parse_document), so the database and the files cannot disagree
on what a row is. The key columns are for queries; a row written again (a job's speedups
filled in, tune's final round) replaces the earlier one. `fingerprint` is the run's
fingerprint (fingerprint.py) as JSON, which `history` tells runs apart by.

Each row is its own transaction in WAL mode with a busy timeout: two runs writing at once
wait for each other, and a crash or Ctrl-C loses at most the row being written. A database
from a newer cudabench, or a file that is not SQLite, is a HistoryError (one line).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudabench.core.errors import ResultsError
from cudabench.core.records import Ceilings, ResultRow, RowKey, RunMeta, command_kind
from cudabench.record import fingerprint as fp
from cudabench.record.compare import runs_like
from cudabench.record.history_db import HistoryError, connect, connect_readonly
from cudabench.record.results import kernels_dirty, meta_dict, parse_document, parse_row, row_record
from cudabench.record.schema import SchemaError, read_record
from cudabench.record.stems import RESULTS_DIR

__all__ = ["History", "HistoryError", "RunInfo", "db_path"]


def db_path(explicit: Path | None = None) -> Path:
    return explicit or Path(os.environ.get("CUDABENCH_DB", RESULTS_DIR / "cudabench.db"))


@dataclass(frozen=True)
class RunInfo:
    """One run as the database lists it."""

    id: int
    started: str
    command: str
    tag: str
    git_sha: str
    git_dirty: bool
    gpu: str
    timing_mode: str
    complete: bool
    source: str
    fingerprint: dict[str, str]  # {} for a run whose metadata did not read


Like = tuple[str, frozenset[str]]  # a run's kind of command and its ops (compare.runs_like)

_RUN_COLUMNS = (
    "runs.id, runs.started, runs.command, runs.tag, runs.git_sha, runs.git_dirty, "
    "runs.gpu, runs.timing_mode, runs.complete, runs.source, runs.fingerprint"
)


# rows of a run that is not verify's (its rows are checks, untimed: history shows timings)
_NOT_CHECKS = "command_kind(runs.command) != 'verify'"


def _run_info(r: tuple[Any, ...]) -> RunInfo:
    return RunInfo(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], r[7], bool(r[8]), r[9], fp.loads(r[10]))


class History:
    """An open database: `open()` it (creating or migrating), add runs and rows, query."""

    def __init__(self, path: Path | None = None, readonly: bool = False) -> None:
        self.path = db_path(path)
        self.readonly = readonly  # for readers (history, compare --against): never writes
        self.db: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ opening

    def open(self) -> History:
        """Connect (history_db.py): read-write, the folder and schema made or migrated; or,
        `readonly`, reading what is there without creating anything."""
        self.db = connect_readonly(self.path) if self.readonly else connect(self.path)
        # the queries that leave out verify's checks ask a run's kind of its command
        self.db.create_function("command_kind", 1, command_kind, deterministic=True)
        return self

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def __enter__(self) -> History:
        return self.open() if self.db is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _db(self) -> sqlite3.Connection:
        assert self.db is not None, "History.open() first"
        return self.db

    # ------------------------------------------------------------------ writing

    def add_run(self, meta: RunMeta, tag: str = "", source: str = "", dirty: bool | None = None) -> int:
        """A new run (its rows come with add_row); returns its id."""
        cursor = self._db().execute(
            """INSERT INTO runs (started, command, tag, git_sha, git_dirty, gpu, driver,
               timing_mode, cudabench_version, complete, source, meta_json, fingerprint)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                meta.started,
                meta.command,
                tag,
                meta.git_sha,
                int(kernels_dirty() if dirty is None else dirty),
                meta.device.name,
                meta.device.driver_version,
                meta.timing_mode,
                meta.cudabench_version,
                int(meta.complete),
                source,
                json.dumps(meta_dict(meta)),
                fp.dumps(fp.fingerprint(meta)),
            ),
        )
        return int(cursor.lastrowid or 0)

    def add_row(self, run_id: int, row: ResultRow) -> None:
        """Insert a row, or replace the run's row with the same key."""
        self._db().execute(
            """INSERT INTO rows (run_id, op, variant, shape, dtype, params, status, time_us,
               spread, row_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (run_id, op, variant, shape, dtype, params) DO UPDATE SET
               status = excluded.status, time_us = excluded.time_us,
               spread = excluded.spread, row_json = excluded.row_json""",
            (
                run_id,
                row.op,
                row.variant,
                row.shape,
                row.dtype,
                row.params,
                row.status.value,
                row.time_us,
                row.spread,
                json.dumps(row_record(row)),
            ),
        )

    def finish_run(self, run_id: int, meta: RunMeta) -> None:
        self._db().execute(
            "UPDATE runs SET complete = ?, meta_json = ?, fingerprint = ? WHERE id = ?",
            (int(meta.complete), json.dumps(meta_dict(meta)), fp.dumps(fp.fingerprint(meta)), run_id),
        )

    def imported(self, source: str) -> int | None:
        """The run already imported from `source` (a results file's path), if any."""
        found = self._db().execute("SELECT id FROM runs WHERE source = ?", (source,)).fetchone()
        return int(found[0]) if found else None

    def find(self, meta: RunMeta) -> int | None:
        """The recorded run a results file's metadata belongs to (same start and command)."""
        found = (
            self._db()
            .execute(
                "SELECT id FROM runs WHERE started = ? AND command = ? ORDER BY id DESC",
                (meta.started, meta.command),
            )
            .fetchone()
        )
        return int(found[0]) if found else None

    def import_run(self, meta: RunMeta, rows: list[ResultRow], source: str, tag: str = "") -> int:
        """A whole run from a results file, in one transaction."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            run_id = self.add_run(meta, tag, source, dirty=False)
            for row in rows:
                self.add_row(run_id, row)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return run_id

    # ------------------------------------------------------------------ reading

    def runs(self, tag: str | None = None, limit: int | None = None) -> list[RunInfo]:
        """Runs, newest first (optionally with one tag)."""
        query = f"SELECT {_RUN_COLUMNS} FROM runs"
        args: tuple[Any, ...] = ()
        if tag is not None:
            query += " WHERE tag = ?"
            args = (tag,)
        query += " ORDER BY started DESC, id DESC"
        if limit:
            query += f" LIMIT {int(limit)}"
        return [_run_info(r) for r in self._db().execute(query, args)]

    def resolve(self, ref: str, exclude: int | None = None, like: Like | None = None) -> int:
        """A run id from `last` (the newest run like the one judged: `like` its kind of
        command and ops, as compare's default pair; any run without it), `last~N` (N before
        it), a tag (its newest run) or a number, among the runs other than `exclude` (the
        judged run's own record); HistoryError naming what exists if none."""
        runs = [r for r in self.runs() if r.id != exclude]
        if not runs:
            raise HistoryError(f"history database {self.path} holds no run but the one judged")
        if ref == "last" or ref.startswith("last~"):
            back = int(ref[5:] or 0) if ref[5:].isdigit() or ref == "last" else -1
            if back < 0:
                raise HistoryError(f"{ref!r}: write last or last~N (N a whole number)")
            what = ""
            if like is not None:
                ops = self.ops()
                runs = runs_like(*like, runs, lambda r: (command_kind(r.command), ops.get(r.id, frozenset())))
                what = f" like the run judged ({like[0]} of {', '.join(sorted(like[1])) or 'no rows'})"
            if back >= len(runs):
                raise HistoryError(
                    f"{ref!r}: the database holds {len(runs)} other run(s){what}; name one by tag or id"
                )
            return runs[back].id
        if ref.isdigit() and any(r.id == int(ref) for r in runs):
            return int(ref)
        tagged = [r for r in runs if r.tag == ref]
        if tagged:
            return tagged[0].id
        tags = sorted({r.tag for r in runs if r.tag})
        from cudabench.core.names import did_you_mean

        raise HistoryError(
            f"no run tagged or numbered {ref!r} (tags: {', '.join(tags) or 'none'}; "
            f"or last, last~N, a run id){did_you_mean(ref, tags)}"
        )

    def ops(self) -> dict[int, frozenset[str]]:
        """Each run's ops (the ops of its rows), by run id."""
        found: dict[int, set[str]] = {}
        for run_id, op in self._db().execute("SELECT DISTINCT run_id, op FROM rows"):
            found.setdefault(run_id, set()).add(op)
        return {run_id: frozenset(ops) for run_id, ops in found.items()}

    def ceilings(self, key: tuple[str, str, float]) -> Ceilings | None:
        """The newest ceilings a run of this (GPU model, driver, memory clock) recorded in its
        metadata (`cudabench ceilings` and every run with a `% ceiling` column record them),
        or None."""
        gpu = key[0]
        for (text,) in self._db().execute(
            "SELECT meta_json FROM runs WHERE gpu = ? ORDER BY started DESC, id DESC", (gpu,)
        ):
            raw = json.loads(text).get("ceilings")
            if not isinstance(raw, dict):
                continue
            try:
                found = read_record(Ceilings, raw, "meta.ceilings")
            except SchemaError:  # a run whose record this version cannot read: skip it
                continue
            if (found.gpu, found.driver, found.memory_clock_mhz) == key:
                return found
        return None

    def load(self, run_id: int) -> tuple[RunMeta, list[ResultRow]]:
        """A run as a results file would give it, read through the same checks."""
        db = self._db()
        found = db.execute("SELECT meta_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            raise HistoryError(f"no run {run_id} in {self.path}")
        rows = [
            json.loads(r[0])
            for r in db.execute("SELECT row_json FROM rows WHERE run_id = ? ORDER BY rowid", (run_id,))
        ]
        try:
            return parse_document({"meta": json.loads(found[0]), "rows": rows}, f"{self.path} run {run_id}")
        except ResultsError as exc:
            raise HistoryError(str(exc)) from None

    def case_rows(
        self, key: RowKey, gpu: str | None = None, limit: int | None = None
    ) -> list[tuple[RunInfo, ResultRow]]:
        """One case's timed rows across runs (not verify's checks), oldest first (the `limit`
        newest), on one GPU model if given; matched by the row key (op, variant, shape,
        dtype, params)."""
        query = f"""SELECT {_RUN_COLUMNS}, row_json FROM rows JOIN runs ON runs.id = rows.run_id
                    WHERE op = ? AND variant = ? AND shape = ? AND dtype = ? AND params = ?
                    AND {_NOT_CHECKS}"""
        args: list[Any] = [key.op, key.variant, key.shape, key.dtype, key.params]
        if gpu is not None:
            query += " AND gpu = ?"
            args.append(gpu)
        query += " ORDER BY started DESC, runs.id DESC"
        if limit:
            query += f" LIMIT {int(limit)}"
        found = []
        for r in self._db().execute(query, args):
            info = _run_info(r)
            try:
                row = parse_row(json.loads(r[11]), f"{self.path} run {r[0]}")
            except (ResultsError, ValueError):
                continue  # a row this cudabench cannot read is not history it can judge
            found.append((info, row))
        return found[::-1]

    def work_seconds(self, keys: list[RowKey], gpu: str) -> dict[RowKey, float]:
        """The seconds each row took last time on this GPU model (its set-up and timing, the
        row's `setup_s` + `measure_s`), for the keys the history has such a row of: what
        parts.split orders a sweep's jobs by."""
        query = f"""SELECT row_json FROM rows JOIN runs ON runs.id = rows.run_id
                    WHERE op = ? AND variant = ? AND shape = ? AND dtype = ? AND params = ?
                    AND gpu = ? AND {_NOT_CHECKS} ORDER BY runs.id DESC LIMIT 1"""
        found = {}
        for key in keys:
            where = (key.op, key.variant, key.shape, key.dtype, key.params, gpu)
            hit = self._db().execute(query, where).fetchone()
            record = json.loads(hit[0]) if hit else {}
            spent = [record.get(name) for name in ("setup_s", "measure_s")]
            if all(isinstance(s, (int, float)) for s in spent):
                found[key] = float(sum(s for s in spent if s is not None))
        return found

    def keys(self, op: str, checks: bool = False) -> list[RowKey]:
        """The distinct row keys of an op's timed rows (`checks`: of verify's checks too, the
        rows of `cudabench verify` and of a run's verify pass), for history's did-you-mean
        and defaults."""
        query = (
            "SELECT DISTINCT op, variant, shape, dtype, params FROM rows JOIN runs ON runs.id = rows.run_id "
            f"WHERE op = ?{'' if checks else f' AND {_NOT_CHECKS}'} ORDER BY variant, shape, dtype, params"
        )
        return [RowKey(*r) for r in self._db().execute(query, (op,))]
