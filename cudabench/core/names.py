"""Names a user types (ops, variants, dtypes, parameters, tags): the closest known ones when
a name does not exist, so every "unknown X" error can suggest a fix."""

from __future__ import annotations

import difflib


class UnknownName(KeyError):
    """An op or variant name that does not exist; the message suggests the closest ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def closest(name: str, choices: list[str]) -> str:
    """` (did you mean a, b?)`, or the choices when none is close."""
    return did_you_mean(name, choices) or f" (choose from {', '.join(choices)})"


def did_you_mean(name: str, choices: list[str]) -> str:
    """` (did you mean a, b?)`, or '' when none is close (for a message that lists the
    choices itself)."""
    near = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else ""
