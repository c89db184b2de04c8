"""The error model's shared parts: float32's unit roundoff and each function's rounding
allowance, the registries the rules fill (elementwise.py, sums.py, tracer.py), the context one
trace shares, the exception for what has no rule, and `Mask`, a comparison's result where
float32 could decide some elements the other way. traced.py is the array that carries them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

U = 2.0**-24  # float32's unit roundoff
LAMBDA = 1.0  # the probabilistic sum term's multiple (the module docstring's "The sums.")
SAFETY = 3.0  # C: tolerance = C * bound + ulps u |ref| (calibrated: scratch/verdicts/RESULTS.md)
AMBIGUITY = 4.0  # a comparison is too close to call when |lhs - rhs| <= this * (e_lhs + e_rhs)

# allowance of each function's own rounding, in units of u|z| (1 ulp <= 2u|z|)
ROUND_ADD = 1.0
ROUND_MUL = 1.0
ROUND_DIV = 2.0
ROUND_SQRT = 2.0
ROUND_EXP = 4.0  # + EXP_ARG |x| for the rounding of x * log2(e)
EXP_ARG = 1.0  # 1: exp as exp2(x * log2 e) (__expf, Triton) is right; 0: only expf's 2 ulp
ROUND_LOG = 2.0  # + 2u absolute
ROUND_TRANSCENDENTAL = 4.0  # tanh, erf, sin, cos, exp2, expm1, log1p
ROUND_POW = 8.0


# The rules, registered by elementwise.py, sums.py and tracer.py (which imports both): numpy's
# protocols on a Traced array dispatch through these (its own operators: traced.RULES).
UFUNCS: dict[str, Callable[..., Any]] = {}  # np.exp(traced) and the like: ufunc name -> rule
REDUCERS: dict[str, Callable[..., Any]] = {}  # np.add.reduce(traced): ufunc name -> reduction
FUNCS: dict[str, Callable[..., Any]] = {}  # xp.<name>(traced), np.<name>(traced): name -> rule


class UnsupportedReference(Exception):
    """The reference does something the tracer has no rule for; the message says what.
    The caller should fall back to another tolerance (and say so)."""


class _Ctx:
    """What every traced array of one trace shares: the array module and the unit roundoff."""

    def __init__(self, xp: Any, u: float, lam: float) -> None:
        self.xp = xp
        self.u = u
        self.lam = lam

    def const_err(self, arr: Any) -> Any:
        """The error of a constant as a float32 kernel holds it: |c - float32(c)|."""
        xp = self.xp
        kind = arr.dtype.kind
        if kind == "b":
            return xp.zeros(arr.shape, dtype=xp.float64)
        if kind not in "iuf":
            raise UnsupportedReference(f"a constant of dtype {arr.dtype} (only real numbers)")
        c64 = arr.astype(xp.float64)
        with _quiet(xp):
            rounded = c64.astype(xp.float32).astype(xp.float64)
            return xp.abs(rounded - c64)


def _quiet(xp: Any) -> Any:
    import contextlib

    import numpy as np

    return np.errstate(all="ignore") if xp is np else contextlib.nullcontext()


class Mask:
    """The result of comparing computed values where some elements are too close to call
    (float32 could decide the other way): `b` the float64 decision, `amb` where it is
    uncertain. Only `where` (and &, |, ~ between masks) may use it; anything else raises."""

    __array_priority__ = 1000

    def __init__(self, b: Any, amb: Any) -> None:
        self.b = b
        self.amb = amb

    def _combine(self, other: Any, fn: Callable[[Any, Any], Any]) -> Mask:
        ob, oamb = (other.b, other.amb) if isinstance(other, Mask) else (other, False)
        return Mask(fn(self.b, ob), self.amb | oamb)

    def __and__(self, other: Any) -> Mask:
        return self._combine(other, lambda a, b: a & b)

    __rand__ = __and__

    def __or__(self, other: Any) -> Mask:
        return self._combine(other, lambda a, b: a | b)

    __ror__ = __or__

    def __invert__(self) -> Mask:
        return Mask(~self.b, self.amb)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedReference(
            "a comparison of computed values is too close to call in float32 and is used "
            "other than as where()'s condition"
        )

    __array__ = _refuse
    __bool__ = _refuse
    __getitem__ = _refuse
    __array_function__ = _refuse

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and ufunc.__name__ in ("logical_and", "bitwise_and"):
            return Mask(*_mask_parts(inputs, lambda a, b: a & b))
        if method == "__call__" and ufunc.__name__ in ("logical_or", "bitwise_or"):
            return Mask(*_mask_parts(inputs, lambda a, b: a | b))
        if method == "__call__" and ufunc.__name__ in ("logical_not", "invert"):
            return ~inputs[0]
        return self._refuse()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._refuse()


def _mask_parts(inputs: Sequence[Any], fn: Callable[[Any, Any], Any]) -> tuple[Any, Any]:
    a, b = inputs
    ab, aamb = (a.b, a.amb) if isinstance(a, Mask) else (a, False)
    bb, bamb = (b.b, b.amb) if isinstance(b, Mask) else (b, False)
    return fn(ab, bb), aamb | bamb
