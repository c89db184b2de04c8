"""Connecting to the history database (history.py reads and writes it): read-write, where
the folder, the file and the schema are made or migrated (history_schema.set_up); or read
only, for the readers (`history`, `compare --against`), creating nothing and needing no write
access. Every failure is a HistoryError of one line: no database yet, not SQLite, not a
cudabench database, a schema newer than this cudabench's, or one that cannot be written.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cudabench.record.history_schema import SCHEMA_VERSION, NewerSchema, set_up

BUSY_TIMEOUT_MS = 30_000


class HistoryError(ValueError):
    """A database that cannot be used (newer schema, not SQLite, not writable); one line."""


def connect(path: Path) -> sqlite3.Connection:
    """Read-write: the folder made, WAL and the schema set up (migrated when older)."""
    db = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        set_up(db, BUSY_TIMEOUT_MS / 1000)
    except NewerSchema as exc:
        if db is not None:
            db.close()
        raise HistoryError(
            f"history database {path}: schema version {exc.version} is "
            f"newer than this cudabench's ({SCHEMA_VERSION}); upgrade "
            "cudabench or use another --db"
        ) from None
    except sqlite3.DatabaseError as exc:  # not a database, locked for good, read-only
        if db is not None:
            db.close()
        raise HistoryError(
            f"history database {path}: {exc} (move it away, or use --db / CUDABENCH_DB for another)"
        ) from None
    except OSError as exc:
        raise HistoryError(f"history database {path}: {exc.strerror}") from None
    return db


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Read only: creates nothing (no folder, no file, no schema) and needs no write access,
    so a database in a read-only folder, or someone else's, reads. A WAL database whose
    folder cannot hold the reader's shared-memory file is read as immutable; an older schema
    is upgraded first where the file can be written."""
    if not path.is_file():
        raise HistoryError(
            f"no history database at {path} yet (every `cudabench run` "
            "adds its rows there; --db or CUDABENCH_DB names another)"
        )
    uri = path.resolve().as_uri()
    last: sqlite3.Error | None = None
    for mode in ("?mode=ro", "?mode=ro&immutable=1"):
        db = None
        try:
            db = sqlite3.connect(uri + mode, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError as exc:  # cannot open: try again as immutable
            if db is not None:
                db.close()
            last = exc
            if "no such table" in str(exc):
                break
            continue
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            last = exc
            break
        version = int(found[0]) if found else 0
        if version < SCHEMA_VERSION:  # upgrade it first, where it can be written
            db.close()
            try:
                connect(path).close()
            except HistoryError:
                pass
            else:
                return connect_readonly(path)
        if version != SCHEMA_VERSION:
            db.close()
            newer = version > SCHEMA_VERSION
            raise HistoryError(
                f"history database {path}: schema version {version} is "
                + (
                    f"newer than this cudabench's ({SCHEMA_VERSION}); upgrade cudabench or use another --db"
                    if newer
                    else f"older than this cudabench's ({SCHEMA_VERSION}); any `cudabench run` or "
                    "`cudabench import` with write access upgrades it"
                )
            )
        return db
    if last is not None and "no such table" in str(last):
        raise HistoryError(
            f"history database {path}: not a cudabench history database (no schema); use --db / "
            "CUDABENCH_DB for another"
        )
    raise HistoryError(f"history database {path}: cannot read it ({last})")
