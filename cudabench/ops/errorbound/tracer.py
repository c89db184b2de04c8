"""The traced namespace a reference gets as `xp`, and `trace` / `bound`, the entry points."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cudabench.ops.errorbound.elementwise import (
    _UNARY,
    _compare,
    _exact_unary,
    _joined,
    _plain,
    absolute,
    add,
    astype,
    clip,
    divide,
    maximum,
    minimum,
    multiply,
    negative,
    positive,
    power,
    reciprocal,
    square,
    subtract,
    where,
)
from cudabench.ops.errorbound.model import FUNCS, LAMBDA, UFUNCS, U, UnsupportedReference, _Ctx, _quiet
from cudabench.ops.errorbound.sums import (
    _norm,
    cumsum,
    dot,
    einsum,
    inner,
    matmul,
    max,
    mean,
    min,
    sort,
    std,
    sum,
    var,
    vdot,
)
from cudabench.ops.errorbound.traced import Traced, _ctx_of, _lift, _need


def _like(fn_name: str) -> Callable[..., Any]:
    """zeros_like and co.: a traced array of exact constants (a buffer to fill)."""

    def call(x: Any, *args: Any, **kwargs: Any) -> Any:
        ctx = _need(x)
        kwargs.pop("dtype", None)
        v = getattr(ctx.xp, fn_name)(x.v, *args, dtype=ctx.xp.float64, **kwargs)
        return _lift(ctx, v) if fn_name != "empty_like" else Traced(ctx, v, ctx.xp.zeros_like(v))

    call.__name__ = fn_name
    return call


def asarray(x: Any, dtype: Any = None, **kw: Any) -> Any:
    ctx = _ctx_of(x)
    if ctx is None:
        return x  # replaced by the namespace's own (the real xp.asarray)
    t = _lift(ctx, x) if not isinstance(x, (list, tuple)) else stack(x)
    return astype(t, dtype) if dtype is not None else t


def array(x: Any, dtype: Any = None, copy: bool = True, **kw: Any) -> Any:
    t = asarray(x, dtype)
    return t.copy() if isinstance(t, Traced) else t


stack = _joined("stack")

_STRUCTURAL = (
    "reshape",
    "ravel",
    "transpose",
    "swapaxes",
    "moveaxis",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "repeat",
    "tile",
    "take",
    "take_along_axis",
    "diagonal",
    "triu",
    "tril",
    "atleast_1d",
    "atleast_2d",
    "ascontiguousarray",
    "copy",
)
_JOINED = ("concatenate", "stack", "hstack", "vstack", "column_stack")

FUNCS.update(
    {
        **{name: _plain(name) for name in _STRUCTURAL},
        **{name: _joined(name) for name in _JOINED},
        **_UNARY,
        **{name: _exact_unary(name) for name in ("floor", "ceil", "rint", "round", "trunc", "sign")},
        **{name: _like(name) for name in ("zeros_like", "ones_like", "empty_like", "full_like")},
        "add": add,
        "subtract": subtract,
        "multiply": multiply,
        "divide": divide,
        "true_divide": divide,
        "negative": negative,
        "positive": positive,
        "abs": absolute,
        "absolute": absolute,
        "fabs": absolute,
        "square": square,
        "reciprocal": reciprocal,
        "power": power,
        "maximum": maximum,
        "minimum": minimum,
        "fmax": maximum,
        "fmin": minimum,
        "clip": clip,
        "where": where,
        "sum": sum,
        "mean": mean,
        "var": var,
        "std": std,
        "max": max,
        "amax": max,
        "min": min,
        "amin": min,
        "cumsum": cumsum,
        "matmul": matmul,
        "dot": dot,
        "vdot": vdot,
        "inner": inner,
        "einsum": einsum,
        "asarray": asarray,
        "array": array,
        "astype": astype,
        "norm": _norm,
        "sort": sort,
        **{
            name: (lambda n: lambda x, y, **k: _compare(x, y, n))(name)
            for name in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
        },
    }
)

UFUNCS.update(
    {
        name: FUNCS[name]
        for name in (
            "add",
            "subtract",
            "multiply",
            "divide",
            "true_divide",
            "negative",
            "positive",
            "absolute",
            "fabs",
            "square",
            "reciprocal",
            "power",
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "matmul",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
            "equal",
            "not_equal",
            "floor",
            "ceil",
            "rint",
            "trunc",
            "sign",
            *_UNARY,
        )
    }
)

# attributes of xp passed through as they are (types, constants, constructors of plain arrays)
_PASS = (
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint32",
    "uint64",
    "intp",
    "bool_",
    "dtype",
    "finfo",
    "iinfo",
    "pi",
    "e",
    "inf",
    "nan",
    "newaxis",
    "euler_gamma",
    "errstate",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "eye",
    "identity",
    "tri",
    "indices",
    "ndarray",
    "integer",
    "floating",
    "number",
    "isnan",
    "isinf",
    "isfinite",
    "result_type",
    "promote_types",
    "__name__",
)


class _Linalg:
    def __init__(self, real: Any) -> None:
        self._real = real

    def norm(self, x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
        if _ctx_of(x) is None:
            return self._real.norm(x, ord=ord, axis=axis, keepdims=keepdims)
        return _norm(x, ord, axis, keepdims)

    def __getattr__(self, name: str) -> Any:
        raise UnsupportedReference(f"xp.linalg.{name} (no rule for it)")


class TracedNamespace:
    """What `reference` gets as `xp`: the real module's types and constants, and a traced
    version of each function the tracer has a rule for; any other raises."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.linalg = _Linalg(real.linalg)
        self.__name__ = real.__name__

    def __getattr__(self, name: str) -> Any:
        if name in _PASS:
            return getattr(self._real, name)
        fn = FUNCS.get(name)
        if fn is None:
            raise UnsupportedReference(f"xp.{name} (no rule for it)")
        real = getattr(self._real, name, None)

        def call(*args: Any, **kwargs: Any) -> Any:
            if _ctx_of(*args, *kwargs.values()) is None and real is not None:
                return real(*args, **kwargs)  # constants: computed as the reference would
            out = kwargs.pop("out", None)
            result = fn(*args, **kwargs)
            if out is None:
                return result
            if not isinstance(out, Traced):
                raise UnsupportedReference(f"xp.{name}(out=) into a plain array")
            return out._inplace(result)

        return call


def trace(
    reference: Callable[..., Any],
    xp: Any,
    inputs: Sequence[Any],
    u: float = U,
    lam: float = LAMBDA,
    float64_inputs: bool = True,
) -> tuple[Any, Any]:
    """(value, err) of `reference(xp, *inputs)` on traced inputs, both flat float64.
    `inputs` as the kernel gets them (any dtype; exact as stored, e = 0); with
    float64_inputs (Op's default) the reference sees float64 copies, as Op.expected gives."""
    ctx = _Ctx(xp, u, lam)
    given = []
    for x in inputs:
        v = x.astype(xp.float64) if float64_inputs else x.copy()
        given.append(Traced(ctx, v, xp.zeros(v.shape, dtype=xp.float64)))
    try:
        with _quiet(xp):
            out = reference(TracedNamespace(xp), *given)
    except UnsupportedReference:
        raise
    except Exception as exc:  # the plain reference runs: a failure here is the tracer's limit
        raise UnsupportedReference(f"{type(exc).__name__}: {exc}") from exc
    if isinstance(out, (tuple, list)):
        raise UnsupportedReference("a reference returning a sequence (one output array)")
    t = _lift(ctx, out)
    value = xp.asarray(t.v, dtype=xp.float64).reshape(-1)
    err = xp.asarray(t.e, dtype=xp.float64).reshape(-1)
    return value, err


def bound(
    reference: Callable[..., Any],
    xp: Any,
    inputs: Sequence[Any],
    u: float = U,
    lam: float = LAMBDA,
    float64_inputs: bool = True,
) -> Any:
    """Per output element (flat float64, like the reference), a bound on the error of a
    float32 evaluation of `reference`'s formula on these inputs: the module docstring's
    rules. The tolerance is then C * bound + the fixed part (+ a 16-bit output's rounding).
    UnsupportedReference when the reference uses what the tracer has no rule for."""
    return trace(reference, xp, inputs, u, lam, float64_inputs)[1]
