"""The `// cudabench:` header of a kernel file: parsed into a KernelVariant.

A header is a YAML block in `//` comments that starts with `// cudabench:` and ends at the
first line that is not a comment, or is an empty `//`:

    // cudabench:
    //   variant: shuffle
    //   entry: reduce_sum_shuffle
    //   block: 256
    //   grid: segments           # a rule the op defines by name; never eval() of text
    //   dtypes: [float32, float16, bfloat16]   # optional (default float32): one source,
    //                            # compiled once per dtype with CB_T / elem_t its element type
    //   op: reduce               # optional: which op (needed for a file directly in a
    //                            # --kernels folder that holds several ops' files)
    //   init: zero               # zero (or `nan`: fill with NaN) the output before every launch
    //   requires: {cols_multiple_of: 4}   # constraints the op checks (optional); every op
    //                            # also takes min_sm: 90 (the GPU's compute capability, x10);
    //                            # a value may name a parameter (cols_multiple_of: VEC)
    //   about: warp-shuffle reduction (seed 001, 002, 004)

A multi-kernel variant writes `launches:` instead of entry/block/grid: a list of
`{entry, block, grid}` run in order with the op's argument list.

Parsing fails loudly (KernelHeaderError naming file and the key's line, with a did-you-mean)
on a missing or unknown key, a bad value, or a grid rule or `requires:` name the op does not
know. kernels.py finds the files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from cudabench.core.records import KernelVariant, Launch
from cudabench.core.yaml_lines import DuplicateKey
from cudabench.ops.header_text import KernelHeaderError, OtherOp, Where, header_block, load_block

_KEYS = (
    "op",
    "variant",
    "entry",
    "block",
    "grid",
    "launches",
    "about",
    "init",
    "requires",
    "dtypes",
    "params",
    "constraints",
)
_LAUNCH_KEYS = ("entry", "block", "grid")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
# a C name, or a template instantiation: name<args> (types, numbers, `T` for the dtype)
_ENTRY = re.compile(r"^[A-Za-z_]\w*(?:<[\w\s,:*&()+\-]*>)?$")
_T = re.compile(r"\bT\b")
_INITS = ("none", "zero", "nan")  # nan: 0xFF bytes, the empty value of a CAS-loop max
# `requires:` names every op takes: the runner checks them against the GPU (spec.py)
DEVICE_REQUIREMENTS = ("min_sm",)


class _Problems:
    """The mistakes of one header, collected so that `check` reports every one at its
    line instead of the first: `attempt(fn, ...)` runs one independent check."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def attempt(self, fn: Any, *args: Any, default: Any = None) -> Any:
        try:
            return fn(*args)
        except OtherOp:
            raise
        except KernelHeaderError as exc:
            self.found += exc.problems
            return default

    def raise_any(self) -> None:
        if self.found:
            found = list(dict.fromkeys(self.found))
            raise KernelHeaderError(found[0], found)


def _unknown(key: object, choices: Iterable[str]) -> str:
    from cudabench.core.names import closest

    return f"{key!r}{closest(str(key), sorted(choices))}"


def _launch(
    raw: object,
    at: Where,
    parent: Any,
    parent_key: str,
    rules: tuple[str, ...],
    op: str,
    params: dict[str, tuple[int, ...]],
) -> Launch:
    if not isinstance(raw, dict):
        raise KernelHeaderError(f"{at(parent, parent_key)}: a launch must be a mapping of entry, block, grid")
    for key in raw:
        if key not in _LAUNCH_KEYS:
            raise KernelHeaderError(f"{at(raw, key)}: unknown launch key {_unknown(key, _LAUNCH_KEYS)}")
    missing = [k for k in _LAUNCH_KEYS if k not in raw]
    if missing:
        raise KernelHeaderError(f"{at(parent, parent_key)}: header needs {missing} (entry, block, grid)")
    entry, block, grid = raw["entry"], raw["block"], raw["grid"]
    problems = _Problems()

    def check_entry() -> str:
        if not isinstance(entry, str) or not _ENTRY.match(entry.strip()):
            raise KernelHeaderError(
                f"{at(raw, 'entry')}: entry {entry!r} is not a C identifier "
                "or a template instantiation like kernel<T, 4>"
            )
        return " ".join(entry.split())

    def check_block() -> tuple[str, tuple[int, ...]]:
        block_param = ""
        if isinstance(block, str):  # `block: BLOCK`: a parameter's values are the block sizes
            if block not in params:
                raise KernelHeaderError(
                    f"{at(raw, 'block')}: block {block!r} is neither a "
                    f"number nor a parameter {_unknown(block, params)}"
                )
            block_param, sizes = block, params[block]
        else:
            sizes = (block,)
        for size in sizes:
            if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 1024:
                raise KernelHeaderError(f"{at(raw, 'block')}: block {size!r} must be an integer 1..1024")
            if size % 32:
                raise KernelHeaderError(
                    f"{at(raw, 'block')}: block {size} must be a multiple of 32 (whole warps)"
                )
        return block_param, sizes

    def check_grid() -> None:
        if not isinstance(grid, str) or not _NAME.match(grid):
            raise KernelHeaderError(f"{at(raw, 'grid')}: grid {grid!r} must name one of the op's grid rules")
        if grid not in rules:
            raise KernelHeaderError(f"{at(raw, 'grid')}: {op} has no grid rule {_unknown(grid, rules)}")

    entry_text = problems.attempt(check_entry)
    checked = problems.attempt(check_block)
    problems.attempt(check_grid)
    problems.raise_any()
    block_param, sizes = checked
    return Launch(entry=entry_text, block=sizes[0], grid=grid, block_param=block_param)


def parse_header(path: Path, op: str, text: str | None = None) -> KernelVariant:
    """Read one .cu file's header into a KernelVariant of `op`. Everything that can be known
    without a GPU is checked against the op: its grid rules, the names its `requires:`
    knows. Raises KernelHeaderError naming the file and the key's own line (OtherOp when the
    header says `op:` another op)."""
    if text is None:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelHeaderError(f"{path}: cannot read: {exc}") from exc
    block_text, line = header_block(text, path)
    at = Where(path, line)
    try:
        raw = load_block(block_text)
    except DuplicateKey as exc:
        second, first = line + 1 + exc.line, line + 1 + exc.first_line
        raise KernelHeaderError(f"{path}:{second}: header: {exc.said(first)}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{line + 1 + mark.line}" if mark is not None else at()
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "mapping values" in problem:  # `variant: a: b`
            problem += " (header values are YAML: quote a value that holds ': ')"
        raise KernelHeaderError(f"{where}: header is not valid YAML: {problem}") from exc
    if not isinstance(raw, dict):
        raise KernelHeaderError(f"{at()}: header must be 'key: value' lines")
    from cudabench.ops.registry import all_ops, get_op

    ops = all_ops()
    declared = raw.get("op")
    if isinstance(declared, str) and declared in ops and declared != op:
        raise OtherOp(f"{at(raw, 'op')}: a {declared} kernel, not {op}")
    problems = _Problems()  # every mistake below is reported, each at its own line
    for key in raw:
        if key not in _KEYS:
            problems.found.append(f"{at(raw, key)}: unknown header key {_unknown(key, _KEYS)}")
    if declared is not None and (not isinstance(declared, str) or declared not in ops):
        problems.found.append(f"{at(raw, 'op')}: unknown op {_unknown(declared, ops)}")
    operation = get_op(op)
    rules = tuple(operation.grid_rules)
    requirements = tuple(operation.requirements) + DEVICE_REQUIREMENTS
    for key in ("variant", "about"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            problems.found.append(f"{at(raw, key)}: header needs '{key}: <text>'")
    name = raw.get("variant")
    if isinstance(name, str) and name.strip() and not _NAME.match(name):
        problems.found.append(f"{at(raw, 'variant')}: variant name {name!r} must be a plain identifier")
    before = len(problems.found)
    params = problems.attempt(_params, raw, at, default={})
    params_ok = len(problems.found) == before
    single = [k for k in _LAUNCH_KEYS if k in raw]
    launches: tuple[Launch, ...] = ()
    if "launches" in raw:
        if single:
            problems.found.append(f"{at(raw, single[0])}: write either launches or entry/block/grid")
        if not isinstance(raw["launches"], list) or not raw["launches"]:
            problems.found.append(f"{at(raw, 'launches')}: launches must be a non-empty list")
        else:
            launches = tuple(
                problems.attempt(_launch, item, at, raw, "launches", rules, op, params)
                for item in raw["launches"]
            )
    else:
        fields = type(raw)({k: raw[k] for k in _LAUNCH_KEYS if k in raw})
        fields.lines = getattr(raw, "lines", {})  # type: ignore[attr-defined]
        launches = (problems.attempt(_launch, fields, at, raw, "variant", rules, op, params),)
    init = raw.get("init", "none")
    if init not in _INITS:
        problems.found.append(
            f"{at(raw, 'init')}: init {_unknown(init, _INITS)} is not one of {list(_INITS)}"
        )
    requires = raw.get("requires", {}) or {}
    if not isinstance(requires, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, str)) and not isinstance(v, bool)
        for k, v in requires.items()
    ):
        problems.found.append(
            f"{at(raw, 'requires')}: requires must map names to integers or parameters "
            "(e.g. {cols_multiple_of: 4} or {cols_multiple_of: VEC})"
        )
        requires = {}
    for key, value in requires.items():
        if key not in requirements:
            known = _unknown(key, requirements) if requirements else f"{key!r} ({op} checks none)"
            problems.found.append(f"{at(requires, key)}: {op} cannot check requires {known}")
        elif isinstance(value, str) and params_ok and value not in params:
            from cudabench.core.names import closest

            hint = closest(value, list(params)) if params else " (the header declares no params:)"
            problems.found.append(
                f"{at(requires, key)}: requires {key}: {value!r} is neither an integer nor a parameter{hint}"
            )
    dtypes = problems.attempt(_dtypes, raw, at, default=("float32",))
    constraints = (
        problems.attempt(_constraints, raw, at, params, default=()) if params_ok else ()
    )  # constraints over parameters that failed would only echo them
    problems.raise_any()
    return KernelVariant(
        op=op,
        name=str(name),
        path=str(path),
        launches=launches,
        about=" ".join(raw["about"].split()),
        init=init,
        requires=tuple(sorted(requires.items())),
        source_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
        header_line=line,
        dtypes=dtypes,
        params=tuple(params.items()),
        constraints=constraints,
        values=tuple((name, values[0]) for name, values in params.items()),
    )


_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _params(raw: Any, at: Where) -> dict[str, tuple[int, ...]]:
    """`params: {NAME: [v0, v1, ...]}`: C macro names, integer values, the first the default."""
    value = raw.get("params", {}) or {}
    if not isinstance(value, dict):
        raise KernelHeaderError(
            f"{at(raw, 'params')}: params must map names to lists of "
            "integers, e.g. {BLOCK: [256, 128, 512]}"
        )
    found: dict[str, tuple[int, ...]] = {}
    problems: list[str] = []
    for name, values in value.items():
        where = at(value, name)
        if not isinstance(name, str) or not _PARAM.match(name) or name.startswith("CB_"):
            problems.append(
                f"{where}: parameter {name!r} must be a C macro name "
                "(letters, digits, _), not starting with CB_"
            )
            continue
        if isinstance(values, int) and not isinstance(values, bool):
            values = [values]
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        ):
            problems.append(f"{where}: parameter {name} needs a list of integers (got {values!r})")
            continue
        if len(set(values)) != len(values):
            problems.append(f"{where}: parameter {name} lists a value twice: {values}")
            continue
        found[name] = tuple(values)
    if problems:
        raise KernelHeaderError(problems[0], problems)
    return found


def _constraints(raw: Any, at: Where, params: dict[str, tuple[int, ...]]) -> tuple[str, ...]:
    """`constraints: [...]`: each parsed safely (space.py) against the parameter names; the
    default configuration must satisfy them, since `run` uses it."""
    from cudabench.ops.space import Space, SpaceError, parse_constraint

    value = raw.get("constraints", []) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KernelHeaderError(
            f"{at(raw, 'constraints')}: constraints must be a list of "
            'expressions, e.g. ["BLOCK * ITEMS <= 4096"]'
        )
    for text in value:
        try:
            parse_constraint(text, tuple(params))
        except SpaceError as exc:
            raise KernelHeaderError(f"{at(raw, 'constraints')}: {exc}") from None
    constraints = tuple(" ".join(text.split()) for text in value)
    space = Space(tuple(params.items()), constraints)
    if not space.allows(space.default):
        raise KernelHeaderError(
            f"{at(raw, 'constraints')}: the default configuration (each "
            "parameter's first value) breaks the constraints"
        )
    return constraints


def _dtypes(raw: Any, at: Where) -> tuple[str, ...]:
    from cudabench.core.dtypes import DTYPES

    value = raw.get("dtypes", ["float32"])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise KernelHeaderError(
            f"{at(raw, 'dtypes')}: dtypes must be a list such as [float32, float16, bfloat16]"
        )
    for name in value:
        if name not in DTYPES:
            raise KernelHeaderError(f"{at(raw, 'dtypes')}: unknown dtype {_unknown(name, DTYPES)}")
    return tuple(dict.fromkeys(value))


def instantiate(entry: str, ctype: str) -> str:
    """A header's entry with the dtype bound: `k<T, 4>` -> `k<__half, 4>`; a C name as is."""
    return _T.sub(ctype, entry) if "<" in entry else entry
