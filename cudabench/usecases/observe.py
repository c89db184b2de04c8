"""What a use case tells its caller while it works: the observer protocol.

A use case never prints. What a person at a terminal should see as it happens (a note on
what the plan left out, a database that could not be opened, the rows as they end, a long
step under way) goes to an `Observer`; everything else is in the use case's result record.
The CLI passes its rich progress bars and stderr lines (cli/render.py `Terminal`); the
Python API passes none, and `Silent` hears it all and says nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Protocol

from cudabench.core.records import Case, ResultRow


class Progress(Protocol):
    """A sweep's listener (run.sweep.Listener: a case started, a row ended) that can also say
    a line while it runs (the ceilings being measured first)."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def finished(self, row: ResultRow) -> None: ...

    def announce(self, text: str) -> None: ...


class Observer(Protocol):
    """Hears a use case as it works."""

    def note(self, text: str) -> None:
        """Something the command did other than asked, or a caveat (the plan left a variant
        out, a tuned configuration was taken, the ceilings are measured again)."""

    def error(self, text: str) -> None:
        """Trouble the command goes on past (a kernel file that did not load, a history
        database that could not be opened); the result says how it ends."""

    def say(self, text: str) -> None:
        """A line of information (what ncu is about to profile)."""

    def progress(self, total: int | None, devices: int) -> AbstractContextManager[Progress]:
        """Rows are about to run: `total` of them (None: unknown) over `devices` GPUs. The
        context follows them; Interrupted and SweepFailed (run.sweep) leave it."""

    def working(self, text: str) -> AbstractContextManager[None]:
        """A long step without rows (ncu profiling) is under way."""


class _Quiet:
    def started(self, case: Case, name: str, device: int) -> None:
        pass

    def finished(self, row: ResultRow) -> None:
        pass

    def announce(self, text: str) -> None:
        pass


class Silent:
    """The observer of a caller that wants only the result (the Python API)."""

    def note(self, text: str) -> None:
        pass

    def error(self, text: str) -> None:
        pass

    def say(self, text: str) -> None:
        pass

    @contextlib.contextmanager
    def progress(self, total: int | None, devices: int) -> Iterator[Progress]:
        yield _Quiet()

    @contextlib.contextmanager
    def working(self, text: str) -> Iterator[None]:
        yield
