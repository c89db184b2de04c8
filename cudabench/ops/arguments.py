"""An op's kernel argument list, derived from its declarations: the arguments' names in
order, each one's role, and their values for one launch. `Op.arg_names`, `Op.arg_roles`
and `Op.kernel_args` (ops/api.py) are these functions; the build (build/abi.py) checks a
kernel's signature against the names and roles, the runner passes the values."""

from __future__ import annotations

from typing import Any, Protocol

from cudabench.ops.declarations import CTYPES, Scalar, Tensor
from cudabench.ops.protocol import Geometry


class Declared(Protocol):
    """What these functions read of an op (ops/api.py's Op has it all; naming Op here would
    draw an import circle)."""

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    scalars: tuple[Scalar, ...]
    workspace: tuple[str, ...]
    rule_scalars: tuple[Scalar, ...]
    args: tuple[str, ...] | None

    def arg_names(self) -> tuple[str, ...]: ...

    def dims_of(self, inputs: tuple[Any, ...], out: Any) -> Any: ...


def arg_names(op: Declared) -> tuple[str, ...]:
    """`op.args`, or inputs, outputs (an in-place one is its input), workspace, scalars,
    then the grid rule's scalars."""
    if op.args is not None:
        return tuple(op.args)
    names = [t.name for t in op.inputs]
    names += [t.name for t in op.outputs if t.name not in names]
    return (
        *names,
        *op.workspace,
        *(s.name for s in op.scalars),
        *(s.name for s in op.rule_scalars),
    )


def arg_roles(op: Declared) -> tuple[tuple[str, str], ...]:
    """(role, name) per kernel argument: input, output, inplace, workspace, scalar, rule."""
    ins = {t.name for t in op.inputs}
    outs = {t.name for t in op.outputs}
    roles = []
    for name in op.arg_names():
        if name in ins:
            role = "inplace" if name in outs else "input"
        elif name in outs:
            role = "output"
        elif name in op.workspace:
            role = "workspace"
        elif name in {s.name for s in op.scalars}:
            role = "scalar"
        else:
            role = "rule"
        roles.append((role, name))
    return tuple(roles)


def kernel_args(
    op: Declared, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any], geometry: Geometry
) -> tuple[Any, ...]:
    """The values of `op.arg_names()` for one launch: the arrays, the workspace, the scalars
    (resolved on the dims the arrays have) and the grid rule's scalars in their C types."""
    dims = op.dims_of(inputs, out)
    tensors = {t.name: x for t, x in zip(op.inputs, inputs)}
    for t in op.outputs:
        tensors[t.name] = out  # an in-place output replaces its input
    scalars = {s.name: s for s in op.scalars}
    ruled = {s.name: (s, v) for s, v in zip(op.rule_scalars, geometry.scalars)}
    values = []
    for name in op.arg_names():
        if name in tensors:
            values.append(tensors[name])
        elif name in op.workspace:
            values.append(workspace[name])
        elif name in scalars:
            values.append(scalars[name].resolve(dims))
        elif name in ruled:
            scalar, value = ruled[name]
            values.append(CTYPES[scalar.ctype](value))
        else:
            raise ValueError(
                f"{op.name}: the grid rule gave {len(geometry.scalars)} "
                f"scalars, but rule_scalars names {len(op.rule_scalars)} "
                f"({', '.join(s.name for s in op.rule_scalars)})"
            )
    return tuple(values)
