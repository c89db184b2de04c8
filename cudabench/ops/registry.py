"""Where ops come from: folders holding an `op.py` (cudabench/op.py's API).

The built-in catalogue is `kernels/<op>/op.py`; a user adds folders with `--ops DIR` (the
commands call `use_ops`) or `$CUDABENCH_OPS` (folders joined by os.pathsep). A folder is
either one op's folder (it holds op.py) or a folder of op folders. The op's name is its
folder's unless the file declares another.

Each op file is imported once per process (by its path, as its own module) and must define
one `Op` subclass (or an instance named `OP`). What goes wrong is one line, never a
traceback: a file that does not import (the file, its line, the exception's last line), a
declaration that cannot serve (cudabench/ops/checks.py), two files defining one op name (both
files named). Such an op is refused by `get_op` with that line; the others load. What the
op's code raises at run time (its reference, inputs, baselines, Python variants) is a row's
one line, naming the line of the user's file that raised it (`describe_error`).

Worker processes do not see the parent's command line: a job carries its op's file
(`runner.CaseJob.op_file`) and the worker loads it with `load_op_file`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import sysconfig
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.core.paths import BUILTIN_KERNELS, PACKAGE_DIR

if TYPE_CHECKING:
    from cudabench.ops.api import Op

ENV = "CUDABENCH_OPS"
OP_FILE = "op.py"


class OpsFolderError(ValueError):
    """An --ops folder that does not exist or cannot be read; one line."""


class OpLoadError(ValueError):
    """An op file that cannot serve; one line naming the file."""


@dataclass(frozen=True)
class Catalogue:
    """The ops found in the op folders, and what went wrong finding them."""

    ops: dict[str, Op]
    files: dict[str, Path]  # op name -> its op.py
    problems: tuple[str, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)  # name -> why get_op refuses it


_extra: tuple[Path, ...] = ()  # the --ops folders (use_ops)
_loaded: dict[tuple[Path, int], Op | OpLoadError] = {}  # (file, mtime) -> its op or error
_pinned: dict[str, Op] = {}  # ops a worker loaded by file (load_op_file)
_cache: dict[str, tuple[tuple[object, ...], Catalogue]] = {}


def use_ops(folders: list[Path] | tuple[Path, ...] | None) -> None:
    """Make `folders` (the --ops options) the user's op folders, beside $CUDABENCH_OPS and
    the built-in catalogue. OpsFolderError (one line) for a folder that is not there."""
    global _extra
    for folder in folders or ():
        if not Path(folder).is_dir():
            raise OpsFolderError(f"--ops {folder}: no such folder")
        try:
            next(iter(Path(folder).iterdir()), None)
        except OSError as exc:
            raise OpsFolderError(f"--ops {folder}: cannot read: {exc.strerror}") from None
    _extra = tuple(Path(f) for f in folders or ())


def op_roots() -> tuple[list[Path], list[str]]:
    """The folders searched, in order (built-in, $CUDABENCH_OPS, --ops), and a problem line
    for each $CUDABENCH_OPS entry that is not a folder."""
    roots, problems = [BUILTIN_KERNELS], []
    for text in os.environ.get(ENV, "").split(os.pathsep):
        if text.strip():
            if Path(text).is_dir():
                roots.append(Path(text))
            else:
                problems.append(f"{ENV}: {text}: no such folder")
    roots += list(_extra)
    unique = list({root.resolve(): root for root in roots}.values())
    return unique, problems


def op_folders(root: Path) -> list[Path]:
    """The op folders of a root: itself when it holds op.py, else its subfolders that do."""
    if (root / OP_FILE).is_file():
        return [root]
    return sorted(path.parent for path in root.glob(f"*/{OP_FILE}"))


def catalogue() -> Catalogue:
    """Every op of the op folders (cached until the folders or their op files change)."""
    roots, problems = op_roots()
    files = [folder / OP_FILE for root in roots for folder in op_folders(root)]
    problems += _empty_folders()
    key = (*roots, *problems, *((f, _mtime(f)) for f in files))
    cached = _cache.get("catalogue")
    if cached is not None and cached[0] == key:
        return cached[1]
    ops: dict[str, Op] = {}
    where: dict[str, Path] = {}
    refused: dict[str, str] = {}
    for path in files:
        try:
            op = _load(path)
        except OpLoadError as exc:
            problems.append(str(exc))
            refused.setdefault(path.parent.name, str(exc))
            continue
        if op.name in where:
            line = f"op {op.name!r} is defined twice: {where[op.name]} and {path}"
            problems.append(line)
            refused[op.name] = line
            continue
        ops[op.name] = op
        where[op.name] = path
    found = Catalogue(ops, where, tuple(problems), refused)
    _cache["catalogue"] = (key, found)
    return found


def all_ops() -> dict[str, Op]:
    """Every op that loaded, by name (a refused one is left out)."""
    found = catalogue()
    return {name: op for name, op in found.ops.items() if name not in found.refused}


def problems() -> list[str]:
    """The one-line problems of the op folders (files that did not load, clashes)."""
    return list(catalogue().problems)


def get_op(name: str) -> Op:
    """The op of that name; UnknownName (one line: why it is refused, or a did-you-mean)."""
    from cudabench.core.names import UnknownName, closest

    found = catalogue()
    if name in found.refused:
        raise UnknownName(found.refused[name])
    if name in found.ops:
        return found.ops[name]
    if name in _pinned:
        return _pinned[name]
    empty = "".join(f"; {line}" for line in _empty_folders())
    raise UnknownName(f"unknown op {name!r}{closest(name, sorted(all_ops()))}{empty}")


def _empty_folders() -> list[str]:
    """A line for each --ops folder that holds no op."""
    return [
        f"--ops {root}: no op there (an op is a folder holding {OP_FILE}, or a folder of such folders)"
        for root in _extra
        if not op_folders(root)
    ]


def op_file(name: str) -> str:
    """The op file of an op ('' for an unknown op or one without a file)."""
    path = catalogue().files.get(name)
    return str(path.resolve()) if path is not None else ""


def op_folder(name: str) -> Path | None:
    """The folder of an op's file (its variants live there), or None."""
    path = catalogue().files.get(name)
    return path.parent if path is not None else None


def load_op_file(path: str | Path) -> Op:
    """The op an op file defines (a worker's way to the op a job names: it does not know the
    parent's --ops). OpLoadError, one line, if it cannot serve."""
    op = _load(Path(path))
    _pinned[op.name] = op
    return op


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _load(path: Path) -> Op:
    resolved = path.resolve()
    key = (resolved, _mtime(resolved))
    if key not in _loaded:
        try:
            _loaded[key] = _import(resolved, path)
        except OpLoadError as exc:
            _loaded[key] = exc
    found = _loaded[key]
    if isinstance(found, OpLoadError):
        raise found
    return found


def import_file(
    path: Path, prefix: str, shown: Path | None = None, error: type[Exception] = ValueError
) -> Any:
    """A user's Python file (an op file, a variants file) imported by path as a module of its
    own (`<prefix>_<stem>_<hash of the path>`, so two folders' `op.py` never collide); any
    failure of the file is `error` with one line naming it (describe_failure)."""
    resolved = path.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    stem = resolved.parent.name if resolved.stem == "op" else resolved.stem
    module_name = f"{prefix}_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise error(f"{shown or path}: cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's file is its one line
        sys.modules.pop(module_name, None)
        raise error(describe_failure(exc, resolved, shown or path)) from None
    return module


def _import(resolved: Path, shown: Path) -> Op:
    from cudabench.ops.api import Op, OpDefinitionError

    module = import_file(resolved, "cudabench_op", shown, OpLoadError)
    module_name = module.__name__
    instance = getattr(module, "OP", None)
    classes = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Op) and v.__module__ == module_name
    ]
    if isinstance(instance, Op):
        op = instance
    elif len(classes) == 1:
        try:
            op = classes[0]()
        except Exception as exc:  # noqa: BLE001 - the user's __init__
            raise OpLoadError(describe_failure(exc, resolved, shown)) from None
    elif not classes:
        raise OpLoadError(f"{shown}: defines no Op subclass (class MyOp(cudabench.op.Op))")
    else:
        names = ", ".join(c.__name__ for c in classes)
        raise OpLoadError(
            f"{shown}: defines {len(classes)} Op subclasses ({names}); keep one, or name the op's instance OP"
        )
    if not op.name:
        op.name = resolved.parent.name
    try:
        op.validate()
    except OpDefinitionError as exc:
        raise OpLoadError(f"{shown}: {exc}") from None
    return op


def describe_failure(exc: BaseException, resolved: Path, shown: Path) -> str:
    """`file:line: ExceptionName: message`, the line being the last one of that file in the
    traceback (a syntax error's own line)."""
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).resolve() == resolved:
        return f"{shown}:{exc.lineno}: SyntaxError: {exc.msg}"
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    top = (getattr(exc, "name", None) or "").split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and top and (resolved.parent / f"{top}.py").is_file():
        last += (
            f" ({top}.py beside it is not importable by name: each op and variants file is "
            "imported on its own, so that two folders' files never mix; keep shared code in "
            "the file, or in a package on PYTHONPATH)"
        )
    lines = [
        f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == resolved
    ]
    return f"{shown}:{lines[-1]}: {last}" if lines else f"{shown}: {last}"


# the standard library's and the installed packages' folders: a library's code, not the user's
_LIBRARY_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")
_LIBRARIES = {Path(sysconfig.get_paths()[k]).resolve() for k in _LIBRARY_PATHS}


def describe_error(exc: BaseException, folder: str | Path | None = None) -> str:
    """`ExceptionName: message`, the text of a row's ERROR; where the traceback passes through
    the user's code, on one line with its innermost such frame: `(path:line, in function)`.
    The user's code: a file of `folder` (the op's), or any file outside cudabench, the
    standard library and site-packages. The path is relative to the working directory where
    it lies under it (as the user gave the --ops folder), else in full. An error of cudabench's own code or
    a library's, with no frame of the user's, keeps its text."""
    text = f"{type(exc).__name__}: {exc}"
    mine = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename, folder)]
    if not mine:
        return text
    frame = mine[-1]
    path = os.path.abspath(frame.filename)
    try:
        relative = os.path.relpath(path)
    except (ValueError, OSError):  # another drive (Windows); the working directory gone
        relative = path
    shown = relative if not relative.startswith(os.pardir) and len(relative) < len(path) else path
    message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    said = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{said} ({shown}:{frame.lineno}, in {frame.name})"


def _users(filename: str, folder: str | Path | None) -> bool:
    """Whether a traceback's file is the user's: in the op's folder, or outside cudabench,
    the standard library and site-packages (`<frozen ...>`, `<string>`: never)."""
    if not filename or filename.startswith("<") or not os.path.isabs(filename):
        return False  # a relative name: a compiled library's source (cupy/_core/core.pyx)
    path = Path(filename).resolve()
    if folder is not None and path.is_relative_to(Path(folder).resolve()):
        return True
    if path.is_relative_to(PACKAGE_DIR) or {"site-packages", "dist-packages"} & set(path.parts):
        return False
    return not any(path.is_relative_to(library) for library in _LIBRARIES)
