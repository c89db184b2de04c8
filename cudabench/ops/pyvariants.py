"""Python variants: functions in an op's folder (any `*.py` but op.py) marked with
`@cudabench.op.variant(...)`, run beside the .cu variants (Triton, CuPy, torch.compile...).

The parent reads them like .cu headers, without running the file: `discover_python` parses it
(ast) and reads the decorator's literal arguments into a `KernelVariant` of kind "python"
(`function` names the callable), so `list`, `check` and the planner never import user code or
CuPy. The worker imports the file by its path (`load`), checks what the decorator asks of
the machine (`unavailable`: modules that must import, a GPU), and binds the callable to the
case's arrays (`bind`); the runner validates and times it like any variant. A file that does
not parse still gives a variant (named after the file), whose row is the ERROR that importing
it raises: a broken variant is a row, and the sweep goes on.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cudabench.core.records import KernelVariant

OP_FILE = "op.py"
PYTHON = "python"  # KernelVariant.kind of a Python variant
_KEYS = ("name", "dtypes", "about", "writes", "needs", "gpu", "requires", "host")


class PythonVariantError(RuntimeError):
    """A Python variant that cannot run (its file does not import, the function is gone);
    one line: the row's error."""


def _decorator_call(node: ast.expr) -> ast.Call | None:
    """The `variant(...)` call among a function's decorators (`variant`, `op.variant`,
    `cudabench.op.variant`), or None."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return node if name == "variant" else None


def discover_python(op: str, folder: Path) -> tuple[list[KernelVariant], list[str]]:
    """The Python variants in an op folder's `*.py` files (op.py and `_*.py` excluded), and
    one problem line per decorator that cannot be read."""
    from cudabench.core.dtypes import DTYPES

    variants: list[KernelVariant] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.py")):
        if path.name == OP_FILE or path.name.startswith("_"):
            continue
        try:
            text = path.read_text()
            tree = ast.parse(text, filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            line = getattr(exc, "lineno", None)
            where = f"{path}:{line}" if line else str(path)
            problems.append(f"{where}: the Python variant file does not parse: {exc}")
            variants.append(
                KernelVariant(
                    op=op,
                    name=path.stem,
                    path=str(path),
                    launches=(),
                    about=f"does not parse: {exc}",
                    dtypes=tuple(DTYPES),
                    kind=PYTHON,
                    function="",
                )
            )
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            call = next((c for c in map(_decorator_call, node.decorator_list) if c), None)
            if call is None:
                continue
            try:
                variants.append(_variant(op, path, node, call, digest))
            except ValueError as exc:
                problems.append(f"{path}:{call.lineno}: {exc}")
    return variants, problems


def _variant(
    op: str, path: Path, node: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, digest: str
) -> KernelVariant:
    from cudabench.core.dtypes import DTYPES

    if call.args:
        raise ValueError("@variant takes keyword arguments only (name=..., dtypes=..., about=...)")
    fields: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg not in _KEYS:
            raise ValueError(f"@variant has no argument {keyword.arg!r} ({', '.join(_KEYS)})")
        try:
            fields[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ValueError(
                f"@variant {keyword.arg}= must be a literal (cudabench reads it without importing the file)"
            ) from None
    dtypes = fields.get("dtypes", ("float32",))
    dtypes = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown or not dtypes:
        raise ValueError(f"@variant dtypes {list(dtypes)}: choose from {', '.join(DTYPES)}")
    requires = fields.get("requires", {}) or {}
    if not isinstance(requires, dict) or not all(isinstance(v, int) for v in requires.values()):
        raise ValueError("@variant requires= must map names to integers, e.g. {'max_cols': 8192}")
    known = _requirements(op)
    for key in requires:
        if key not in known:
            raise ValueError(f"@variant requires {key!r}: {op} checks {', '.join(known) or 'none'}")
    about = fields.get("about") or (ast.get_docstring(node) or "").strip().split("\n")[0]
    return KernelVariant(
        op=op,
        name=str(fields.get("name") or node.name),
        path=str(path),
        launches=(),
        about=" ".join(str(about).split()) or "a Python variant",
        source_hash=digest,
        header_line=call.lineno,
        dtypes=dtypes,
        requires=tuple(sorted(requires.items())),
        kind=PYTHON,
        function=node.name,
        needs=_names(fields.get("needs", ())),
    )


def _names(needs: Any) -> tuple[str, ...]:
    """`needs=` as a tuple of module names ("torch" alone is one name, not five letters)."""
    names = (needs,) if isinstance(needs, str) else tuple(needs)
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError("@variant needs= must list module names, e.g. ('triton', 'torch')")
    return names


def _requirements(op: str) -> tuple[str, ...]:
    from cudabench.ops.header import DEVICE_REQUIREMENTS
    from cudabench.ops.registry import get_op

    return (*get_op(op).requirements, *DEVICE_REQUIREMENTS)


_modules: dict[tuple[str, str], Any] = {}


def load(variant: KernelVariant) -> tuple[Callable[..., Any], Any]:
    """The variant's callable and its decorator record (cudabench.op.VariantInfo), imported
    from its file by path in this process; PythonVariantError (one line) if it cannot be."""
    from cudabench.ops.registry import import_file

    path = Path(variant.path)
    key = (str(path.resolve()), variant.source_hash)
    if key not in _modules:  # the user's file: its failure is the row's error
        _modules[key] = import_file(path, "cudabench_variant", error=PythonVariantError)
    fn = getattr(_modules[key], variant.function, None) if variant.function else None
    info = getattr(fn, "__cudabench_variant__", None)
    if fn is None or info is None:
        raise PythonVariantError(
            f"{path}: no @variant function {variant.function!r} (it was there when the sweep was planned)"
        )
    return fn, info


def unavailable(info: Any, backend_name: str) -> str | None:
    """Why this machine cannot run the variant (a module it needs does not import, it needs
    GPU arrays and the backend is the fake one, or it needs NumPy arrays and the backend is
    a GPU's), or None."""
    for module in info.needs:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - not installed, or a broken install
            return f"needs {module}, which does not import here ({type(exc).__name__})"
    if info.gpu and backend_name == "fake":
        return "needs a GPU (the fake backend has NumPy arrays)"
    if info.host and backend_name != "fake":
        return f"a host variant (NumPy arrays): not run on the {backend_name} backend"
    return None


def bind(
    fn: Callable[..., Any], info: Any, in_place_input: int | None, inputs: tuple[Any, ...], out: Any
) -> tuple[Callable[[], None], Callable[[], Any]]:
    """(the call the runner times, what it produced): a writer gets the inputs and the
    output (an in-place op: the inputs, the overwritten one replaced by the output);
    otherwise the inputs, and its return value is the output."""
    if info.writes:
        if in_place_input is None:
            args = (*inputs, out)
        else:
            args = tuple(out if i == in_place_input else x for i, x in enumerate(inputs))

        def write() -> None:
            fn(*args)

        return write, lambda: out
    produced: list[Any] = [None]

    def call() -> None:
        produced[0] = fn(*inputs)

    return call, lambda: produced[0]


def as_output(result: Any, out: Any, name: str) -> Any:
    """The variant's result as an array of the output's size; TypeError (one line) if not."""
    size = getattr(result, "size", None)
    if size is None or not hasattr(result, "reshape"):
        raise TypeError(
            f"{name} returned {type(result).__name__}, not an array of {out.size} "
            "elements (writes=True if it fills the output it is given)"
        )
    if size != out.size:
        raise TypeError(f"{name} returned {size} elements, the output has {out.size}")
    return result
