"""A variant's tunable space: its parameters' values, the constraints between them, and the
configurations that satisfy them. Needs no GPU.

A header declares the space (header.py parses it):

    //   params: {BLOCK: [256, 128, 512], ITEMS: [64, 16, 32]}    # first value: the default
    //   constraints: ["BLOCK * ITEMS <= 16384", "BLOCK % 64 == 0 or ITEMS == 64"]

A constraint is parsed with `ast.parse(text, mode="eval")` and checked against a whitelist
(parameter names, integer literals, + - * // % **, comparisons, and/or/not, parentheses), so
nothing in a header can run code: `__import__('os')` is an error naming the header line, not
an evaluation. `/` is integer division's mistake in waiting and is refused; write `//`.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
from dataclasses import dataclass
from typing import Any, cast

from cudabench.core.records import KernelVariant


class SpaceError(ValueError):
    """A constraint or a parameter value that cannot be used; one line."""


_BINARY: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type, Any] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
MAX_POWER = 64  # 2 ** BITS is fine; 10 ** 10 ** 10 is not a constraint


def parse_constraint(text: str, names: tuple[str, ...]) -> ast.Expression:
    """The constraint's syntax tree, checked: only the whitelisted nodes, only known names."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise SpaceError(f"constraint {text!r}: not an expression ({exc.msg})") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in names:
                from cudabench.core.names import did_you_mean

                known = ", ".join(names) or "none"
                raise SpaceError(
                    f"constraint {text!r}: {node.id!r} is not a parameter "
                    f"(params: {known}){did_you_mean(node.id, list(names))}"
                )
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int):
                raise SpaceError(f"constraint {text!r}: only integer numbers, not {node.value!r}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            raise SpaceError(f"constraint {text!r}: '/' is not integer division; write '//'")
        elif not isinstance(
            node,
            (
                ast.Expression,
                ast.BoolOp,
                ast.And,
                ast.Or,
                ast.UnaryOp,
                ast.Not,
                ast.USub,
                ast.UAdd,
                ast.BinOp,
                ast.Compare,
                ast.Load,
                *_BINARY,
                *_COMPARE,
            ),
        ):
            raise SpaceError(
                f"constraint {text!r}: {type(node).__name__} is not allowed (names, "
                "integers, + - * // % **, comparisons, and/or/not)"
            )
    return tree


def _value(node: ast.AST, values: dict[str, int]) -> int | bool:
    if isinstance(node, ast.Expression):
        return _value(node.body, values)
    if isinstance(node, ast.Constant):
        return cast(int, node.value)  # _parse let only integer constants through
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        inner = _value(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not inner
        return -inner if isinstance(node.op, ast.USub) else +inner
    if isinstance(node, ast.BoolOp):
        results = (_value(v, values) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, values), _value(node.right, values)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_POWER:
            raise SpaceError(f"power {left} ** {right} is too large for a constraint")
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            return False  # a configuration that divides by zero does not satisfy anything
        result: int = _BINARY[type(node.op)](left, right)
        return result
    if isinstance(node, ast.Compare):
        left = _value(node.left, values)
        for op, comparator in zip(node.ops, node.comparators):
            right = _value(comparator, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise SpaceError(f"{type(node).__name__} in a constraint")  # parse_constraint refused it


@dataclass(frozen=True)
class Space:
    """Parameters (name -> values, the first the default) and the constraints on them."""

    params: tuple[tuple[str, tuple[int, ...]], ...]
    constraints: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    @property
    def full_size(self) -> int:
        """Configurations before the constraints: the product of the value counts."""
        return math.prod(len(values) for _, values in self.params)

    @property
    def default(self) -> dict[str, int]:
        return {name: values[0] for name, values in self.params}

    def _trees(self) -> list[ast.Expression]:
        return [parse_constraint(c, self.names) for c in self.constraints]

    def violated(self, config: dict[str, int]) -> str | None:
        """The first constraint the configuration breaks, or None."""
        for text, tree in zip(self.constraints, self._trees()):
            if not _value(tree, config):
                return text
        return None

    def allows(self, config: dict[str, int]) -> bool:
        return self.violated(config) is None

    def valid(self) -> list[dict[str, int]]:
        """Every configuration that satisfies the constraints, in the header's order (so the
        default, every parameter's first value, comes first when it is valid)."""
        trees = self._trees()
        configs = (
            dict(zip(self.names, combo))
            for combo in itertools.product(*(values for _, values in self.params))
        )
        return [c for c in configs if all(_value(tree, c) for tree in trees)]


def parse_param_option(text: str) -> tuple[str, tuple[int, ...]]:
    """`BLOCK=128,256,512` (a `--param`) -> ('BLOCK', (128, 256, 512)); SpaceError if not."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise SpaceError(f"--param {text!r}: write NAME=V1,V2,... (e.g. BLOCK=128,256)")
    try:
        values = tuple(int(v, 0) for v in rest.split(",") if v.strip())
    except ValueError:
        raise SpaceError(f"--param {text!r}: values must be integers (e.g. BLOCK=128,256)") from None
    if not values:
        raise SpaceError(f"--param {text!r}: no values after '='")
    return name, tuple(dict.fromkeys(values))


RANGE_FACTOR = 16  # --param may reach this many times a parameter's largest declared value


def allowed_range(values: tuple[int, ...]) -> tuple[int, int]:
    """The values `--param` may give a parameter the header declares `values` for: from 1
    (or the smallest declared, where that is 0 or less: GRID_K's 0, "the occupancy") up to
    RANGE_FACTOR times the largest. Beyond the header's own values, so that a sweep can look
    around them (ITEMS=8 beside 16..256), but never 0 where the header has no 0 (a grid
    rule would divide by it) nor an absurd size."""
    return min(min(values), 1), max(max(values), 1) * RANGE_FACTOR


def check_overrides(variant: KernelVariant, overrides: dict[str, tuple[int, ...]]) -> None:
    """--param values a variant can take: names its header declares (did-you-mean when not),
    values within the declared ones' range (allowed_range), and, for a parameter that is the
    block size, whole warps from 32 to 1024. SpaceError."""
    declared = dict(variant.params)
    for name in overrides:
        if name not in declared:
            from cudabench.core.names import did_you_mean

            known = ", ".join(declared) or "none"
            raise SpaceError(
                f"--param {name}: {variant.name} has no parameter {name!r} "
                f"(it has: {known}){did_you_mean(name, list(declared))}"
            )
    for name, values in overrides.items():
        lo, hi = allowed_range(declared[name])
        bad = [v for v in values if not lo <= v <= hi]
        if bad:
            listed = ", ".join(map(str, declared[name]))
            raise SpaceError(
                f"--param {name}={bad[0]}: outside {lo}..{hi}, the range "
                f"{variant.name}'s header allows for {name} (its values {listed}; "
                f"from {lo} up to {RANGE_FACTOR}x the largest)"
            )
    for launch in variant.launches:
        bad = [b for b in overrides.get(launch.block_param, ()) if not (32 <= b <= 1024 and b % 32 == 0)]
        if launch.block_param and bad:
            raise SpaceError(
                f"--param {launch.block_param}={bad[0]}: the block size of "
                f"{variant.name} must be a multiple of 32 from 32 to 1024"
            )


def grid(variant: KernelVariant, overrides: dict[str, tuple[int, ...]]) -> list[KernelVariant]:
    """The variant configured at every point of the grid that `overrides` spans (the other
    parameters at their default), keeping the header's constraints. SpaceError for a name
    the header does not declare, or a grid the constraints leave empty."""
    check_overrides(variant, overrides)
    declared = dict(variant.params)
    space = Space(
        tuple((n, overrides.get(n, (dict(variant.values)[n],))) for n in declared), variant.constraints
    )
    configs = space.valid()
    if not configs:
        shown = "; ".join(f"{n}={','.join(map(str, v))}" for n, v in overrides.items())
        raise SpaceError(
            f"--param {shown}: no configuration of {variant.name} satisfies its "
            f"constraints ({'; '.join(variant.constraints)})"
        )
    return [variant.configured(c) for c in configs]


def configurations(variant: KernelVariant) -> list[KernelVariant]:
    """The variant at every configuration of its space that satisfies its constraints, the
    default first (`check --all` compiles each); the variant itself when it has no params."""
    if not variant.params:
        return [variant]
    space = Space(variant.params, variant.constraints)
    return [variant.configured(config) for config in space.valid()]


__all__ = [
    "Space",
    "SpaceError",
    "check_overrides",
    "configurations",
    "grid",
    "parse_constraint",
    "parse_param_option",
]
