"""Operations: each is an `op.py` in its own folder (cudabench/op.py's API), found by
registry.py in the built-in catalogue (kernels/<op>/op.py), $CUDABENCH_OPS and --ops folders.
This package holds the runner's protocol (base.py), the registry, the stock grid rules and
what the catalogue's op files share (matrix.py, torch_baselines.py, ...).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudabench.op import Op


class UnknownName(KeyError):
    """An op or variant name that does not exist; the message suggests the closest ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def closest(name: str, choices: list[str]) -> str:
    near = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" (did you mean {', '.join(near)}?)" if near else f" (choose from {', '.join(choices)})"


def get_op(name: str) -> Op:
    """The op of that name (registry.get_op): UnknownName, one line, if there is none."""
    from cudabench.ops import registry

    return registry.get_op(name)


def all_ops() -> dict[str, Op]:
    """Every op that loaded, by name (registry.all_ops)."""
    from cudabench.ops import registry

    return registry.all_ops()


def __getattr__(name: str) -> Any:
    if name == "OPS":  # `from cudabench.ops import OPS`: the ops as found now
        return all_ops()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
