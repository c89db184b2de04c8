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
from cudabench.ops.header import parse_header
from cudabench.ops.header_text import HEADER_START, KernelHeaderError, OtherOp, header_op


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
        for path in [folder] if folder.is_file() else sorted(folder.glob("*.cu")):  # a --kernels file
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
        if in_op_folder and folder.is_dir():  # Python variants: functions in the op folder's .py files
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
        if root.is_file() or any((root / name).is_dir() for name in names) or root == BUILTIN_KERNELS:
            continue  # a --kernels file names its op (user_roots)
        found += [p for p in sorted(root.glob("*.cu")) if header_op(p) is None]
    return found


class KernelRootError(FileNotFoundError):
    """A `--kernels` path that cannot serve: missing, unreadable, or holding no op's
    kernels (a misspelt op folder, a file whose header names no op); one line."""


def user_roots(paths: Iterable[Path]) -> list[Path]:
    """Check each `--kernels` path; raises KernelRootError with a one-line reason. A folder
    must be readable, and each of its subfolders that holds .cu files must be an op's (a
    misspelt one is named with the closest op, never silently skipped); a file directly in
    it whose header says `op:` must name an op. A single .cu file is taken when its header
    names an op (it joins that op), else refused with the reason."""
    from cudabench.core.names import closest
    from cudabench.ops.registry import all_ops

    ops = sorted(all_ops())
    roots = []
    for path in paths:
        if path.is_file():
            roots.append(_single_file(path, ops))
            continue
        if not path.is_dir():
            what = "file" if path.suffix == ".cu" else "folder"
            raise KernelRootError(f"--kernels {path}: no such {what}")
        try:
            entries = sorted(path.iterdir())
        except OSError as exc:
            raise KernelRootError(f"--kernels {path}: cannot read: {exc.strerror}") from exc
        for entry in entries:
            try:
                holds_kernels = entry.is_dir() and any(entry.glob("*.cu"))
            except OSError:
                holds_kernels = False
            if holds_kernels and entry.name not in ops:
                raise KernelRootError(
                    f"--kernels {path}: its folder {entry.name}/ holds .cu files but is no op's "
                    f"folder{closest(entry.name, ops)}; an op's kernels go in <folder>/<op>/"
                )
            if entry.suffix == ".cu" and entry.is_file():
                named = header_op(entry)
                if named is not None and named not in ops:
                    raise KernelRootError(
                        f"--kernels {path}: {entry.name}'s header names op {named!r}, which is no "
                        f"op{closest(named, ops)}"
                    )
        roots.append(path)
    return roots


def _single_file(path: Path, ops: list[str]) -> Path:
    """A `--kernels` path that is a file: a .cu file whose header names an op."""
    from cudabench.core.names import closest

    if path.suffix != ".cu":
        raise KernelRootError(f"--kernels {path}: not a folder or a .cu file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelRootError(f"--kernels {path}: cannot read: {exc}") from exc
    if HEADER_START not in text:
        raise KernelRootError(f"--kernels {path}: no '{HEADER_START}' header (docs/reference/header.md)")
    named = header_op(path, text)
    if named is None:
        raise KernelRootError(
            f"--kernels {path}: its header names no op, so a single file joins none (add e.g. "
            "'op: reduce' to its header, or pass its folder)"
        )
    if named not in ops:
        raise KernelRootError(
            f"--kernels {path}: its header names op {named!r}, which is no op{closest(named, ops)}"
        )
    return path
