"""An op's declarations checked before anything runs: each mistake is one line
(OpDefinitionError), which the registry prefixes with the op file's path."""

from __future__ import annotations

import re
from typing import Any

from cudabench.ops.declarations import CTYPES, OpDefinitionError, Tensor, TorchCall

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_definition(op: Any, base: Any) -> None:
    """Raise OpDefinitionError for the first declaration of `op` (an instance of a subclass
    of `base`, cudabench.op.Op) that cannot serve."""

    def fail(message: str) -> None:
        raise OpDefinitionError(message)

    if not isinstance(op.name, str) or not _NAME.match(op.name):
        fail(f"op name {op.name!r} must be a plain identifier")
    if not isinstance(op.about, str) or not op.about.strip():
        fail(f"{op.name}: declare about = '<one line: what it computes>'")
    dims = tuple(op.dims)
    if not dims or not all(isinstance(d, str) and _NAME.match(d) for d in dims):
        fail(f"{op.name}: dims must name the case's dimensions, e.g. dims = ('rows', 'cols')")
    if len(set(dims)) != len(dims):
        fail(f"{op.name}: dims {dims} name a dimension twice")
    if any(not isinstance(r, int) or r < 1 for r in op.ranks):
        fail(f"{op.name}: ranks must be shape lengths like (1, 2)")
    tensors = (*op.inputs, *op.outputs)
    if not all(isinstance(t, Tensor) for t in tensors):
        fail(f"{op.name}: inputs and outputs must be Tensor(name, dims) records")
    if len(op.outputs) != 1:
        fail(
            f"{op.name}: declare exactly one output (got {len(op.outputs)}); cudabench "
            "validates one output array per op"
        )
    for t in tensors:
        if not _NAME.match(t.name):
            fail(f"{op.name}: tensor name {t.name!r} must be a plain identifier")
        if not t.axes:
            fail(f"{op.name}: tensor {t.name} has no dims")
        for axis in t.axes:
            if isinstance(axis, str) and axis not in dims:
                fail(
                    f"{op.name}: tensor {t.name} names an unknown dimension {axis!r} "
                    f"(dims: {', '.join(dims)})"
                )
            if not isinstance(axis, (str, int)) or (isinstance(axis, int) and axis < 1):
                fail(f"{op.name}: tensor {t.name}: {axis!r} is neither a dim nor a size")
    names = [t.name for t in op.inputs]
    if len(set(names)) != len(names):
        fail(f"{op.name}: two inputs are named alike ({', '.join(names)})")
    out = op.outputs[0]
    if out.name in names and op.inputs[names.index(out.name)].axes != out.axes:
        fail(f"{op.name}: the in-place output {out.name} must have its input's dims")
    for s in (*op.scalars, *op.rule_scalars):
        if not _NAME.match(s.name):
            fail(f"{op.name}: scalar name {s.name!r} must be a plain identifier")
        if s.ctype not in CTYPES:
            fail(f"{op.name}: scalar {s.name} has C type {s.ctype!r} (choose from {', '.join(CTYPES)})")
    for s in op.scalars:
        if (s.value is None or isinstance(s.value, str)) and (s.value or s.name) not in dims:
            fail(
                f"{op.name}: scalar {s.name} names an unknown dimension "
                f"{s.value or s.name!r} (dims: {', '.join(dims)}; give a value for a "
                "constant)"
            )
    for w in op.workspace:
        if not isinstance(w, str) or not _NAME.match(w):
            fail(f"{op.name}: workspace names must be plain identifiers, got {w!r}")
    known = {
        *names,
        out.name,
        *op.workspace,
        *(s.name for s in op.scalars),
        *(s.name for s in op.rule_scalars),
    }
    args = op.arg_names()
    for name in args:
        if name not in known:
            fail(f"{op.name}: argument {name!r} is no tensor, workspace or scalar of the op")
    if len(set(args)) != len(args):
        fail(f"{op.name}: the argument list {args} names one argument twice")
    for rule, fn in op.rules.items():
        if not _NAME.match(rule) or not callable(fn):
            fail(f"{op.name}: rules must map names to grid-rule functions ({rule!r})")
    for name, baseline in op.library.items():
        if not (callable(baseline) or isinstance(baseline, TorchCall)):
            fail(f"{op.name}: library baseline {name!r} is not callable")
    cls = type(op)
    if cls.reference is base.reference and cls.expected is base.expected:
        fail(
            f"{op.name}: no reference: define reference(self, xp, "
            f"{', '.join(names) or '...'}) returning the float64 result"
        )
    if isinstance(op.accumulate, str) and op.accumulate not in dims:
        fail(f"{op.name}: accumulate names an unknown dimension {op.accumulate!r}")
