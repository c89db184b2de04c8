"""The elementwise rules: operators, functions with their derivatives and documented float32
accuracy, comparisons (`where`), conversions (the package docstring lists them)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from cudabench.ops.errorbound.model import (
    AMBIGUITY,
    EXP_ARG,
    ROUND_ADD,
    ROUND_DIV,
    ROUND_EXP,
    ROUND_LOG,
    ROUND_MUL,
    ROUND_POW,
    ROUND_SQRT,
    ROUND_TRANSCENDENTAL,
    Mask,
    UnsupportedReference,
    _Ctx,
    _quiet,
)
from cudabench.ops.errorbound.traced import RULES, Traced, _lift, _need


def _plain(fn_name: str) -> Callable[..., Any]:
    """A function that moves values without arithmetic (xp.reshape, xp.flip, ...)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        ctx = _need(*args, *kwargs.values())
        fn = getattr(ctx.xp, fn_name)
        x = _lift(ctx, args[0])
        return Traced(ctx, fn(x.v, *args[1:], **kwargs), fn(x.e, *args[1:], **kwargs))

    call.__name__ = fn_name
    return call


def _joined(fn_name: str) -> Callable[..., Any]:
    """concatenate, stack...: a sequence of arrays joined, values and errors alike."""

    def call(arrays: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        ctx = _need(*arrays)
        fn = getattr(ctx.xp, fn_name)
        parts = [_lift(ctx, a) for a in arrays]
        return Traced(
            ctx, fn([p.v for p in parts], *args, **kwargs), fn([p.e for p in parts], *args, **kwargs)
        )

    call.__name__ = fn_name
    return call


def _unary(
    name: str, deriv: Callable[[Any, Any, Any], Any], rounding: Callable[[Any, Any, Any], Any]
) -> Callable[..., Any]:
    """f(x): e = |f'(x)| e_x + rounding(x, z) u (see the module docstring)."""

    def call(x: Any, **kwargs: Any) -> Any:
        ctx = _need(x)
        xp = ctx.xp
        t = _lift(ctx, x)
        with _quiet(xp):
            z = _apply(xp, name, t.v)
            e = xp.abs(deriv(xp, t.v, z)) * t.e + rounding(xp, t.v, z) * ctx.u
        return Traced(ctx, z, e)

    call.__name__ = name
    return call


def _apply(xp: Any, name: str, v: Any) -> Any:
    if name in ("erf", "erfc"):
        if xp.__name__ == "numpy":
            import scipy.special as special
        else:
            import cupyx.scipy.special as special
        return getattr(special, name)(v)
    if name == "expit":
        return 1.0 / (1.0 + xp.exp(-v))
    return getattr(xp, name)(v)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

_UNARY: dict[str, Callable[..., Traced]] = {
    "exp": _unary("exp", lambda xp, x, z: z, lambda xp, x, z: (ROUND_EXP + EXP_ARG * xp.abs(x)) * xp.abs(z)),
    "exp2": _unary(
        "exp2", lambda xp, x, z: math.log(2) * z, lambda xp, x, z: ROUND_TRANSCENDENTAL * xp.abs(z)
    ),
    "expm1": _unary(
        "expm1", lambda xp, x, z: z + 1, lambda xp, x, z: (ROUND_EXP + EXP_ARG * xp.abs(x)) * xp.abs(z + 1)
    ),
    "log": _unary("log", lambda xp, x, z: 1 / x, lambda xp, x, z: ROUND_LOG * (xp.abs(z) + 1)),
    "log2": _unary(
        "log2", lambda xp, x, z: 1 / (x * math.log(2)), lambda xp, x, z: ROUND_LOG * (xp.abs(z) + 1)
    ),
    "log10": _unary(
        "log10", lambda xp, x, z: 1 / (x * math.log(10)), lambda xp, x, z: ROUND_LOG * (xp.abs(z) + 1)
    ),
    "log1p": _unary("log1p", lambda xp, x, z: 1 / (1 + x), lambda xp, x, z: ROUND_TRANSCENDENTAL * xp.abs(z)),
    "sqrt": _unary("sqrt", lambda xp, x, z: 0.5 / z, lambda xp, x, z: ROUND_SQRT * xp.abs(z)),
    "tanh": _unary("tanh", lambda xp, x, z: 1 - z * z, lambda xp, x, z: ROUND_TRANSCENDENTAL * xp.abs(z)),
    "sin": _unary(
        "sin", lambda xp, x, z: xp.cos(x), lambda xp, x, z: ROUND_TRANSCENDENTAL * (xp.abs(z) + 0.5)
    ),
    "cos": _unary(
        "cos", lambda xp, x, z: xp.sin(x), lambda xp, x, z: ROUND_TRANSCENDENTAL * (xp.abs(z) + 0.5)
    ),
    "erf": _unary(
        "erf",
        lambda xp, x, z: _TWO_OVER_SQRT_PI * xp.exp(-x * x),
        lambda xp, x, z: ROUND_TRANSCENDENTAL * xp.abs(z),
    ),
    "erfc": _unary(
        "erfc",
        lambda xp, x, z: _TWO_OVER_SQRT_PI * xp.exp(-x * x),
        lambda xp, x, z: 2 * ROUND_TRANSCENDENTAL * xp.abs(z),
    ),
    # sigmoid, as 1 / (1 + exp(-x)): exp's error damped by (1 - z), then the division
    "expit": _unary(
        "expit",
        lambda xp, x, z: z * (1 - z),
        lambda xp, x, z: (ROUND_ADD + ROUND_DIV + (ROUND_EXP + EXP_ARG * xp.abs(x)) * (1 - z)) * xp.abs(z),
    ),
}


def _exact_unary(name: str) -> Callable[..., Any]:
    """Functions of exact inputs only (floor, sign...): a jump could follow any error."""

    def call(x: Any, **kwargs: Any) -> Any:
        ctx = _need(x)
        t = _lift(ctx, x)
        v = getattr(ctx.xp, name)(t._exact(name))
        return Traced(ctx, v.astype(ctx.xp.float64), ctx.xp.zeros(v.shape, dtype=ctx.xp.float64))

    call.__name__ = name
    return call


# --- arithmetic ----------------------------------------------------------------------------


def _pair(x: Any, y: Any) -> tuple[_Ctx, Traced, Traced]:
    ctx = _need(x, y)
    return ctx, _lift(ctx, x), _lift(ctx, y)


def _chained(ctx: _Ctx, a: Traced, b: Traced, z: Any) -> Traced:
    """z = a + b or a - b, a link of a chain of additions (a + b + c - d ...): bounded in
    any order of its k terms t_i, since a kernel may add them in another order than the
    reference writes (a + (b + c), or each term scaled first): every partial sum but the
    last is at most sum|t_i|, the last is z, so e = sum e_i + u|z| + (k - 2) u sum|t_i|. Two
    terms are the plain rule, e_x + e_y + u|z|; a sum over an axis is sums.py's."""
    xp = ctx.xp
    s_a, k_a, e_a = a.chain if a.chain is not None else (xp.abs(a.v), 1, a.e)
    s_b, k_b, e_b = b.chain if b.chain is not None else (xp.abs(b.v), 1, b.e)
    s, k, leaves = s_a + s_b, k_a + k_b, e_a + e_b
    e = leaves + ROUND_ADD * ctx.u * (xp.abs(z) + (k - 2) * s)
    return Traced(ctx, z, e, (s, k, leaves))


def add(x: Any, y: Any, **kw: Any) -> Traced:
    """x + y: e_x + e_y + u|z|, a chain's in any order of its terms (_chained)."""
    ctx, a, b = _pair(x, y)
    return _chained(ctx, a, b, a.v + b.v)


def subtract(x: Any, y: Any, **kw: Any) -> Traced:
    """x - y: e_x + e_y + u|z|, a chain's in any order of its terms (_chained)."""
    ctx, a, b = _pair(x, y)
    return _chained(ctx, a, b, a.v - b.v)


def multiply(x: Any, y: Any, **kw: Any) -> Traced:
    """x * y: |y| e_x + |x| e_y + e_x e_y + u|z|."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    z = a.v * b.v
    return Traced(ctx, z, xp.abs(b.v) * a.e + xp.abs(a.v) * b.e + a.e * b.e + ROUND_MUL * ctx.u * xp.abs(z))


def divide(x: Any, y: Any, **kw: Any) -> Traced:
    """x / y: (e_x + |z| e_y) / (|y| - e_y) + 2u|z| (infinite where e_y >= |y|)."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    with _quiet(xp):
        z = a.v / b.v
        room = xp.abs(b.v) - b.e
        e = xp.where(room > 0, (a.e + xp.abs(z) * b.e) / xp.where(room > 0, room, 1.0), xp.inf)
        e = e + ROUND_DIV * ctx.u * xp.abs(z)
    return Traced(ctx, z, e)


def negative(x: Any, **kw: Any) -> Traced:
    return -_lift(_need(x), x)


def positive(x: Any, **kw: Any) -> Traced:
    return _lift(_need(x), x)


def absolute(x: Any, **kw: Any) -> Traced:
    return abs(_lift(_need(x), x))


def square(x: Any, **kw: Any) -> Traced:
    return multiply(x, x)


def reciprocal(x: Any, **kw: Any) -> Traced:
    return divide(1.0, x)


def power(x: Any, p: Any, **kw: Any) -> Traced:
    """x ** p for a number p: x*x (2), x*x*x (3), sqrt (1/2), 1/sqrt (-1/2), 1/x (-1), x (1);
    otherwise |p| |x|^(p-1) e_x + 8u|z| (powf's 4 ulp). A computed exponent raises."""
    ctx = _need(x)
    if isinstance(p, Traced) or getattr(p, "ndim", 0) != 0:
        raise UnsupportedReference("x ** y with a computed or array exponent")
    pv = float(p)
    t = _lift(ctx, x)
    if pv == 1:
        return t
    if pv == 2:
        return multiply(t, t)
    if pv == 3:
        return multiply(multiply(t, t), t)
    if pv == 0.5:
        return _UNARY["sqrt"](t)
    if pv == -0.5:
        return divide(1.0, _UNARY["sqrt"](t))
    if pv == -1:
        return divide(1.0, t)
    xp = ctx.xp
    with _quiet(xp):
        z = t.v**pv
        e = abs(pv) * xp.abs(t.v) ** (pv - 1) * t.e if pv != 0 else 0 * t.e
        e = e + ROUND_POW * ctx.u * xp.abs(z)
    return Traced(ctx, z, e)


def maximum(x: Any, y: Any, **kw: Any) -> Traced:
    """max(x, y): max(e_x, e_y), exact (|max(x', y') - max(x, y)| <= max(|dx|, |dy|))."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    return Traced(ctx, xp.maximum(a.v, b.v), xp.maximum(a.e, b.e))


def minimum(x: Any, y: Any, **kw: Any) -> Traced:
    """min(x, y): max(e_x, e_y)."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    return Traced(ctx, xp.minimum(a.v, b.v), xp.maximum(a.e, b.e))


def clip(x: Any, lo: Any = None, hi: Any = None, **kw: Any) -> Traced:
    lo = kw.pop("a_min", kw.pop("min", lo))
    hi = kw.pop("a_max", kw.pop("max", hi))
    t: Any = x
    if lo is not None:
        t = maximum(t, lo)
    if hi is not None:
        t = minimum(t, hi)
    return _lift(_need(x), t)


def _compare(x: Any, y: Any, name: str) -> Any:
    """A comparison: a plain bool array where float32 would decide the same everywhere, else
    a Mask marking the elements too close to call."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    decided = getattr(xp, name)(a.v, b.v)
    slack = a.e + b.e
    amb = (xp.abs(a.v - b.v) <= AMBIGUITY * slack) & (slack > 0)
    if not bool(amb.any()):
        return decided
    return Mask(decided, amb)


def where(cond: Any, x: Any, y: Any) -> Traced:
    """where(c, a, b): the chosen side's error; where c is too close to call, max(e_a, e_b)
    plus |a - b|."""
    ctx, a, b = _pair(x, y)
    xp = ctx.xp
    if isinstance(cond, Traced):
        cond = cond._exact("where's condition") != 0
    if isinstance(cond, Mask):
        e = xp.where(cond.b, a.e, b.e)
        e = xp.where(cond.amb, xp.maximum(a.e, b.e) + xp.abs(a.v - b.v), e)
        return Traced(ctx, xp.where(cond.b, a.v, b.v), e)
    return Traced(ctx, xp.where(cond, a.v, b.v), xp.where(cond, a.e, b.e))


def astype(x: Any, dtype: Any, **kw: Any) -> Any:
    """To a float type: the value so rounded, its rounding added to the error. To an integer
    or bool type: a plain array, for exact values only."""
    ctx = _need(x)
    t = _lift(ctx, x)
    xp = ctx.xp
    if xp.dtype(dtype).kind == "f":
        v = t.v.astype(dtype)
        return Traced(ctx, v, t.e + xp.abs(v.astype(xp.float64) - t.v))
    return t._exact(f"astype({xp.dtype(dtype).name})").astype(dtype)


# --- reductions ----------------------------------------------------------------------------


RULES.update(
    add=add,
    subtract=subtract,
    multiply=multiply,
    divide=divide,
    power=power,
    astype=astype,
    clip=clip,
    compare=_compare,
)
