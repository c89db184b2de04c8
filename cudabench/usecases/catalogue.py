"""The catalogue: each op with its variants (built-in and the user's --kernels folders), and
the files that could not be loaded, each once. `cudabench list` and `cudabench check` read
it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cudabench.core.records import KernelVariant
from cudabench.execution.plan import kernel_roots
from cudabench.ops import registry
from cudabench.ops.api import Op
from cudabench.ops.discovery import discover, unassigned

__all__ = ["catalogue"]


def catalogue(
    ops: Sequence[Op], kernels: Sequence[Path] | None, every_op: bool
) -> tuple[list[tuple[Op, list[KernelVariant]]], list[str]]:
    """Each op with its variants, and the problems, each once. Over every op (`every_op`), a
    file directly in a --kernels folder with no `op:` in its header belongs to none of them:
    it is a problem line, not a variant of all ten. SweepError (one line) for a --kernels
    folder that is not there."""
    roots = kernel_roots(kernels)
    loose = [str(p) for p in unassigned(roots)] if every_op else []
    found, problems = [], []
    for operation in ops:
        variants, bad = discover(operation.name, roots)
        variants = [v for v in variants if v.path not in loose]
        bad = [b for b in bad if not any(b.startswith(f"{p}:") for p in loose)]
        found.append((operation, variants))
        problems += bad
    problems += [
        f"{p}: no 'op:' in its header, so it is no op's variant (add e.g. 'op: reduce', "
        "or name the op on the command line)"
        for p in loose
    ]
    if every_op:  # op files that did not load, clashes (one asked for by name: its own error)
        problems = registry.problems() + problems
    return found, list(dict.fromkeys(problems))
