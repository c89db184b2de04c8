"""The history database's schema: its tables as migrations from nothing, one a version, and
the set-up a connection gets (`set_up`: WAL, foreign keys, migrated). history.py opens the
database and describes the tables.

Version 2 added the rows' `params` (launch parameters) to the key; version 3 the runs'
fingerprint, computed for the runs already there from their metadata (a step may be a
function of the connection).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

from cudabench.core.errors import ResultsError
from cudabench.record import fingerprint as fp
from cudabench.record.results import parse_document

SCHEMA_VERSION = 3


def from_meta_json(text: str) -> str:
    """A stored run's fingerprint, computed from its metadata; '' (every key unknown) if
    the metadata does not read."""
    try:
        meta, _ = parse_document({"meta": json.loads(text), "rows": []}, "runs.meta_json")
    except (ResultsError, ValueError, RecursionError):
        return ""
    return fp.dumps(fp.fingerprint(meta))


def backfill_fingerprints(db: sqlite3.Connection) -> None:
    """The history database's migration to schema 3: each run already there gets the
    fingerprint of its stored metadata."""
    runs = db.execute("SELECT id, meta_json FROM runs").fetchall()
    db.executemany(
        "UPDATE runs SET fingerprint = ? WHERE id = ?", [(from_meta_json(text), run) for run, text in runs]
    )


# Each entry upgrades the schema from the version before it (index 0: from nothing to 1).
_MIGRATIONS: list[list[str | Callable[[sqlite3.Connection], None]]] = [
    [
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT NOT NULL, command TEXT NOT NULL,
            tag TEXT NOT NULL DEFAULT '', git_sha TEXT NOT NULL DEFAULT '',
            git_dirty INTEGER NOT NULL DEFAULT 0, gpu TEXT NOT NULL, driver TEXT NOT NULL,
            timing_mode TEXT NOT NULL, cudabench_version TEXT NOT NULL,
            complete INTEGER NOT NULL DEFAULT 0, source TEXT NOT NULL DEFAULT '',
            meta_json TEXT NOT NULL)""",
        """CREATE TABLE rows (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            op TEXT NOT NULL, variant TEXT NOT NULL, shape TEXT NOT NULL, dtype TEXT NOT NULL,
            status TEXT NOT NULL, time_us REAL, spread REAL, row_json TEXT NOT NULL,
            UNIQUE (run_id, op, variant, shape, dtype))""",
        "CREATE INDEX rows_case ON rows (op, variant, shape, dtype)",
        "CREATE INDEX runs_tag ON runs (tag)",
    ],
    [  # 1 -> 2: the row key gains the launch parameters
        """CREATE TABLE rows_v2 (
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            op TEXT NOT NULL, variant TEXT NOT NULL, shape TEXT NOT NULL, dtype TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '', status TEXT NOT NULL, time_us REAL, spread REAL,
            row_json TEXT NOT NULL, UNIQUE (run_id, op, variant, shape, dtype, params))""",
        """INSERT INTO rows_v2 (run_id, op, variant, shape, dtype, params, status, time_us,
            spread, row_json) SELECT run_id, op, variant, shape, dtype, '', status, time_us,
            spread, row_json FROM rows""",
        "DROP TABLE rows",
        "ALTER TABLE rows_v2 RENAME TO rows",
        "CREATE INDEX rows_case ON rows (op, variant, shape, dtype, params)",
    ],
    [  # 2 -> 3: the runs' fingerprints
        "ALTER TABLE runs ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''",
        backfill_fingerprints,
    ],
]
assert len(_MIGRATIONS) == SCHEMA_VERSION


class NewerSchema(Exception):
    """The database's schema is newer than this cudabench's (`version`)."""

    def __init__(self, version: int) -> None:
        super().__init__(version)
        self.version = version


def set_up(db: sqlite3.Connection, busy_s: float) -> None:
    """WAL mode, foreign keys, the schema migrated (NewerSchema if it is newer). Runs opening
    a new database at the same moment can be told "database is locked" at once, busy
    timeout or not (switching a new file to WAL takes an exclusive lock, and SQLite does not
    wait where waiting could deadlock: 4 of 40 trials of six processes, 2026-11-28): tried
    again until `busy_s` has passed."""
    deadline = time.monotonic() + busy_s
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA foreign_keys = ON")
            _migrate(db)
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _migrate(db: sqlite3.Connection) -> None:
    db.execute("BEGIN IMMEDIATE")  # one migrator at a time
    try:
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(found[0]) if found else 0
        if version > SCHEMA_VERSION:
            raise NewerSchema(version)
        for step in _MIGRATIONS[version:]:
            for statement in step:
                db.execute(statement) if isinstance(statement, str) else statement(db)
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
