"""The errors that mean the user asked for something that cannot be done: one line each.

`UsageError` is what every front door turns into one line on stderr and exit status 2 (the
CLI catches it once, at its top: cli/__init__.py `main`); the Python API raises it as it is.
Modules keep their own precise errors (ConfigError, ShapeError, ...) and the layer that
knows the user's words (the planner, the session) re-raises them as a `SweepError`.
"""

from __future__ import annotations


class UsageError(ValueError):
    """Bad usage, found before or while setting up: one line for the user, exit status 2."""


class SweepError(UsageError):
    """Bad usage found while planning or opening a sweep: one line, nothing has run."""


class ResultsError(UsageError):
    """A file that is not a cudabench results file, or a path that cannot be written: the
    user's to fix, so one line and exit 2 wherever it escapes (UsageError)."""
