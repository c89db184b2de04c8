"""Kernel discovery: find `kernels/<op>/*.cu` and parse each file's metadata header.

A header is a YAML block in `//` comments that starts with `// cudabench:` and ends at the
first line that is not a comment, or is an empty `//`:

    // cudabench:
    //   variant: shuffle
    //   entry: reduce_sum_shuffle
    //   block: 256
    //   grid: segments           # a rule the op defines by name; never eval() of text
    //   init: zero               # zero (or `nan`: fill with NaN) the output before every launch
    //   requires: {cols_multiple_of: 4}   # constraints the op checks (optional)
    //   about: warp-shuffle reduction (seed 001, 002, 004)

A multi-kernel variant writes `launches:` instead of entry/block/grid: a list of
`{entry, block, grid}` run in order with the op's argument list.

Discovery fails loudly (KernelHeaderError naming file and line) on a missing or unknown key,
a bad value, or two files claiming the same variant name for one op.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

import yaml

from cudabench.spec import KernelVariant, Launch

BUILTIN_KERNELS = Path(__file__).resolve().parent.parent / "kernels"
HEADER_START = "// cudabench:"
_KEYS = {"variant", "entry", "block", "grid", "launches", "about", "init", "requires"}
_LAUNCH_KEYS = {"entry", "block", "grid"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_INITS = ("none", "zero", "nan")  # nan: 0xFF bytes, the empty value of a CAS-loop max


class KernelHeaderError(ValueError):
    """A .cu file whose header cannot serve; the message names file and line."""


def _header_block(text: str, path: Path) -> tuple[str, int]:
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == HEADER_START:
            body = []
            for follow in lines[start + 1 :]:
                stripped = follow.strip()
                if not stripped.startswith("//") or not stripped[2:].strip():
                    break  # the header ends at the first non-comment or empty `//` line
                body.append(stripped[2:])
            return "\n".join(body), start + 1
    raise KernelHeaderError(f"{path}:1: no '{HEADER_START}' header (see README: adding a kernel)")


def _launch(raw: object, where: str) -> Launch:
    if not isinstance(raw, dict):
        raise KernelHeaderError(f"{where}: a launch must be a mapping of entry, block, grid")
    unknown = set(raw) - _LAUNCH_KEYS
    if unknown:
        raise KernelHeaderError(f"{where}: unknown launch key(s) {sorted(unknown)}")
    missing = _LAUNCH_KEYS - set(raw)
    if missing:
        raise KernelHeaderError(f"{where}: header needs {sorted(missing)} (entry, block, grid)")
    entry, block, grid = raw["entry"], raw["block"], raw["grid"]
    if not isinstance(entry, str) or not _NAME.match(entry):
        raise KernelHeaderError(f"{where}: entry {entry!r} is not a C identifier")
    if not isinstance(block, int) or isinstance(block, bool) or not 1 <= block <= 1024:
        raise KernelHeaderError(f"{where}: block {block!r} must be an integer 1..1024")
    if block % 32:
        raise KernelHeaderError(f"{where}: block {block} must be a multiple of 32 (whole warps)")
    if not isinstance(grid, str) or not _NAME.match(grid):
        raise KernelHeaderError(f"{where}: grid {grid!r} must name one of the op's grid rules")
    return Launch(entry=entry, block=block, grid=grid)


def parse_header(path: Path, op: str, text: str | None = None) -> KernelVariant:
    """Read one .cu file's header into a KernelVariant. Raises KernelHeaderError."""
    if text is None:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelHeaderError(f"{path}: cannot read: {exc}") from exc
    block_text, line = _header_block(text, path)
    where = f"{path}:{line}"
    try:
        raw = yaml.safe_load(block_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{line + 1 + mark.line}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise KernelHeaderError(f"{at}: header is not valid YAML: {problem}") from exc
    if not isinstance(raw, dict):
        raise KernelHeaderError(f"{where}: header must be 'key: value' lines")
    unknown = set(raw) - _KEYS
    if unknown:
        raise KernelHeaderError(f"{where}: unknown header key(s) {sorted(unknown)}")
    for key in ("variant", "about"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise KernelHeaderError(f"{where}: header needs '{key}: <text>'")
    name = raw["variant"]
    if not _NAME.match(name):
        raise KernelHeaderError(f"{where}: variant name {name!r} must be a plain identifier")
    single = {"entry", "block", "grid"} & set(raw)
    if "launches" in raw:
        if single:
            raise KernelHeaderError(f"{where}: write either launches or entry/block/grid")
        if not isinstance(raw["launches"], list) or not raw["launches"]:
            raise KernelHeaderError(f"{where}: launches must be a non-empty list")
        launches = tuple(_launch(item, where) for item in raw["launches"])
    else:
        launches = (_launch({k: raw[k] for k in _LAUNCH_KEYS if k in raw}, where),)
    init = raw.get("init", "none")
    if init not in _INITS:
        raise KernelHeaderError(f"{where}: init {init!r} must be one of {list(_INITS)}")
    requires = raw.get("requires", {}) or {}
    if not isinstance(requires, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
        for k, v in requires.items()
    ):
        raise KernelHeaderError(f"{where}: requires must map names to integers")
    return KernelVariant(
        op=op,
        name=name,
        path=str(path),
        launches=launches,
        about=" ".join(raw["about"].split()),
        init=init,
        requires=tuple(sorted(requires.items())),
        source_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
        header_line=line,
    )


def discover(op: str, roots: Iterable[Path]) -> tuple[list[KernelVariant], list[str]]:
    """All variants of `op` under each root's `<op>/` folder (or the root itself for a user
    folder holding .cu files directly). Returns (variants, problems): a file with a bad header
    is a problem line and the others still load; a duplicate name is a problem too."""
    variants: dict[str, KernelVariant] = {}
    problems: list[str] = []
    for root in roots:
        folder = root / op if (root / op).is_dir() else root
        for path in sorted(folder.glob("*.cu")):
            try:
                variant = parse_header(path, op)
            except KernelHeaderError as exc:
                problems.append(str(exc))
                continue
            if variant.name in variants:
                first = variants[variant.name].path
                problems.append(
                    f"{path}:{variant.header_line}: variant {variant.name!r} of {op} "
                    f"is already defined in {first}"
                )
                continue
            variants[variant.name] = variant
    return list(variants.values()), problems


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
