"""Kernel discovery: the `.cu` variants of an op (`kernels/<op>/*.cu`, a user's `--kernels`
folders and a user op's own folder) and its Python variants (pyvariants.py), each file's
header parsed by header.py. A file with a bad header, or two files claiming the same variant
name for one op, is a problem line; the others still load.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import KernelVariant
from cudabench.ops.header import KernelHeaderError, OtherOp, header_op, parse_header


def discover(op: str, roots: Iterable[Path]) -> tuple[list[KernelVariant], list[str]]:
    """All variants of `op`: the `.cu` files under each root's `<op>/` folder and the op's
    own folder (with the Python variants of its `.py` files, pyvariants.py), and the files
    directly in a user folder whose header says `op: <op>` or names no op (those join the op
    asked for; `unassigned` lists them for commands that span every op). A file of another
    op's folder or `op:` is not this op's. Returns (variants, problems): a file with a bad
    header is a problem line and the others still load; a duplicate name is a problem too."""
    variants: dict[str, KernelVariant] = {}
    problems: list[str] = []
    for folder, in_op_folder in _folders(op, roots):
        for path in sorted(folder.glob("*.cu")):
            try:
                variant = parse_header(path, op)
            except OtherOp as exc:
                if in_op_folder:  # kernels/reduce/x.cu saying `op: add`
                    problems.append(f"{exc}, but it is in the folder {folder}")
                continue
            except KernelHeaderError as exc:
                problems.extend(exc.problems)
                continue
            _add(variants, variant, problems)
        if in_op_folder:  # Python variants: functions in the op folder's .py files
            from cudabench.ops.pyvariants import discover_python

            found, bad = discover_python(op, folder)
            problems += bad
            for variant in found:
                _add(variants, variant, problems)
    return list(variants.values()), problems


def _add(variants: dict[str, KernelVariant], variant: KernelVariant, problems: list[str]) -> None:
    """Keep a variant under its name, or a problem line if the name is taken."""
    if variant.name in variants:
        problems.append(
            f"{variant.path}:{variant.header_line}: variant {variant.name!r} of "
            f"{variant.op} is already defined in {variants[variant.name].path}"
        )
        return
    variants[variant.name] = variant


def _folders(op: str, roots: Iterable[Path]) -> list[tuple[Path, bool]]:
    """Where `op`'s files are: each root's `<op>/` folder (or the root itself, a user folder
    of loose files), then the folder of a user op's own op.py (its --ops folder), each once.
    The flag: the folder is the op's own (every file in it is the op's)."""
    from cudabench.ops.registry import op_folder

    found: dict[Path, tuple[Path, bool]] = {}
    for root in roots:
        in_op_folder = (root / op).is_dir()
        folder = root / op if in_op_folder else root
        found.setdefault(folder.resolve(), (folder, in_op_folder))
    own = op_folder(op)  # a catalogue op's folder is searched only as a root's (BUILTIN_KERNELS)
    if own is not None and own.resolve().parent != BUILTIN_KERNELS.resolve():
        found.setdefault(own.resolve(), (own, True))
    return list(found.values())


def unassigned(roots: Iterable[Path]) -> list[Path]:
    """Files directly in user folders (not in an op's folder) whose header names no op: a
    command over every op cannot tell which op they are for."""
    from cudabench.ops.registry import all_ops

    names = all_ops()
    found = []
    for root in roots:
        if any((root / name).is_dir() for name in names) or root == BUILTIN_KERNELS:
            continue
        found += [p for p in sorted(root.glob("*.cu")) if header_op(p) is None]
    return found


def user_roots(folders: Iterable[Path]) -> list[Path]:
    """Check `--kernels` folders exist and are readable; raises FileNotFoundError with a
    one-line reason."""
    roots = []
    for folder in folders:
        if not folder.is_dir():
            raise FileNotFoundError(f"--kernels {folder}: no such folder")
        try:
            next(iter(folder.iterdir()), None)
        except OSError as exc:
            raise FileNotFoundError(f"--kernels {folder}: cannot read: {exc.strerror}") from exc
        roots.append(folder)
    return roots
