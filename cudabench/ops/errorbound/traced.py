"""Traced arrays: a float64 value and a bound on a float32 evaluation's error, carried through
every operation (the package docstring gives the rules); the registries the rules fill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cudabench.ops.errorbound.model import (
    FUNCS,
    REDUCERS,
    UFUNCS,
    Mask,
    UnsupportedReference,
    _Ctx,
)

# A Traced array's operators and methods dispatch through these (elementwise.py and sums.py
# register them): add, multiply, sum, cumsum, ... by name.
RULES: dict[str, Callable[..., Traced]] = {}
Chain = tuple[Any, int, Any]  # (sum of |term|, number of terms, sum of the terms' errors)


class Traced:
    """A float64 value `v` and `e`, a bound on a float32 evaluation's error, elementwise.
    Views (reshape, basic indexing, transpose) view both, so in-place updates through a view
    reach the base as in NumPy."""

    __array_priority__ = 1000  # cupy and numpy defer their operators to ours

    def __init__(self, ctx: _Ctx, v: Any, e: Any, chain: Chain | None = None) -> None:
        self.ctx = ctx
        self.v = v
        self.e = e
        # a value that is a chain of + and - (elementwise.add): its terms' summed magnitudes,
        # their count and their propagated errors, so that the chain's rounding is bounded
        # in any order of its terms, not only the order the reference writes them in
        self.chain = chain

    # --- array attributes -------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.v.shape)

    @property
    def ndim(self) -> int:
        return int(self.v.ndim)

    @property
    def size(self) -> int:
        return int(self.v.size)

    @property
    def dtype(self) -> Any:
        return self.v.dtype

    def __len__(self) -> int:
        return len(self.v)

    def __repr__(self) -> str:
        return f"Traced(shape={self.shape}, max err={float(self.e.max()) if self.size else 0.0:.3g})"

    # --- conversions: only exact values may leave the trace ---------------------------
    def _exact(self, what: str) -> Any:
        if bool((self.e != 0).any()):
            raise UnsupportedReference(f"{what} of a computed value (its float32 error would be lost)")
        return self.v

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise UnsupportedReference(
            "a traced array converted to a plain array (np.asarray, np.vectorize, a function without a rule?)"
        )

    def __float__(self) -> float:
        return float(self._exact("float()"))

    def __int__(self) -> int:
        return int(self._exact("int()"))

    def __index__(self) -> int:
        return int(self._exact("an index"))

    def __bool__(self) -> bool:
        return bool(self._exact("a branch (if/while)"))

    def item(self, *args: Any) -> Any:
        return self._exact(".item()").item(*args)

    def tolist(self) -> Any:
        return self._exact(".tolist()").tolist()

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedReference(".get() (a copy to the host) of a traced array")

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]

    # --- operators ---------------------------------------------------------------------
    def __add__(self, o: Any) -> Any:
        return RULES["add"](self, o)

    def __radd__(self, o: Any) -> Any:
        return RULES["add"](o, self)

    def __sub__(self, o: Any) -> Any:
        return RULES["subtract"](self, o)

    def __rsub__(self, o: Any) -> Any:
        return RULES["subtract"](o, self)

    def __mul__(self, o: Any) -> Any:
        return RULES["multiply"](self, o)

    def __rmul__(self, o: Any) -> Any:
        return RULES["multiply"](o, self)

    def __truediv__(self, o: Any) -> Any:
        return RULES["divide"](self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return RULES["divide"](o, self)

    def __pow__(self, o: Any) -> Any:
        return RULES["power"](self, o)

    def __rpow__(self, o: Any) -> Any:
        return RULES["power"](o, self)

    def __matmul__(self, o: Any) -> Any:
        return RULES["matmul"](self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return RULES["matmul"](o, self)

    def __neg__(self) -> Traced:
        return Traced(self.ctx, -self.v, self.e, self.chain)  # -(a + b) = (-a) + (-b): the same chain

    def __pos__(self) -> Traced:
        return self

    def __abs__(self) -> Traced:
        return Traced(self.ctx, abs(self.v), self.e)

    def __lt__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "less")

    def __le__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "less_equal")

    def __gt__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "greater")

    def __ge__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "greater_equal")

    def __eq__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "equal")

    def __ne__(self, o: Any) -> Any:
        return RULES["compare"](self, o, "not_equal")

    __hash__ = None  # type: ignore[assignment]

    def _inplace(self, result: Any) -> Traced:
        r = _lift(self.ctx, result)
        self.v[...] = r.v
        self.e[...] = r.e
        self.chain = r.chain if r.v.shape == self.v.shape else None
        return self

    def __iadd__(self, o: Any) -> Traced:
        return self._inplace(RULES["add"](self, o))

    def __isub__(self, o: Any) -> Traced:
        return self._inplace(RULES["subtract"](self, o))

    def __imul__(self, o: Any) -> Traced:
        return self._inplace(RULES["multiply"](self, o))

    def __itruediv__(self, o: Any) -> Traced:
        return self._inplace(RULES["divide"](self, o))

    def __ipow__(self, o: Any) -> Traced:
        return self._inplace(RULES["power"](self, o))

    # --- indexing ----------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> Traced:
        idx = _plain_index(idx)
        return Traced(self.ctx, self.v[idx], self.e[idx])

    def __setitem__(self, idx: Any, value: Any) -> None:
        idx = _plain_index(idx)
        r = _lift(self.ctx, value)
        self.v[idx] = r.v
        self.e[idx] = r.e

    # --- methods ------------------------------------------------------------------------
    def reshape(self, *shape: Any, **kw: Any) -> Traced:
        return _both(self, lambda a: a.reshape(*shape, **kw))

    def ravel(self, *a: Any) -> Traced:
        return _both(self, lambda x: x.ravel(*a))

    def flatten(self, *a: Any) -> Traced:
        return _both(self, lambda x: x.flatten(*a))

    def transpose(self, *axes: Any) -> Traced:
        return _both(self, lambda x: x.transpose(*axes))

    @property
    def T(self) -> Traced:  # noqa: N802 - numpy's name
        return _both(self, lambda x: x.T)

    def swapaxes(self, a: int, b: int) -> Traced:
        return _both(self, lambda x: x.swapaxes(a, b))

    def squeeze(self, *a: Any, **kw: Any) -> Traced:
        return _both(self, lambda x: x.squeeze(*a, **kw))

    def copy(self, *a: Any, **kw: Any) -> Traced:
        return Traced(self.ctx, self.v.copy(), self.e.copy())

    def astype(self, dtype: Any, copy: bool = True, **kw: Any) -> Any:
        return RULES["astype"](self, dtype)

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Traced:
        _no_out(out)
        return RULES["sum"](self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Traced:
        _no_out(out)
        return RULES["mean"](self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Traced:
        _no_out(out)
        return RULES["max"](self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Traced:
        _no_out(out)
        return RULES["min"](self, axis=axis, keepdims=keepdims)

    def var(
        self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False
    ) -> Traced:
        _no_out(out)
        return RULES["var"](self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(
        self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False
    ) -> Traced:
        _no_out(out)
        return RULES["std"](self, axis=axis, ddof=ddof, keepdims=keepdims)

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Traced:
        _no_out(out)
        return RULES["cumsum"](self, axis=axis)

    def clip(self, lo: Any = None, hi: Any = None, **kw: Any) -> Traced:
        return RULES["clip"](self, lo, hi)

    def dot(self, o: Any) -> Traced:
        return RULES["dot"](self, o)

    def argmax(self, *a: Any, **kw: Any) -> Any:
        return self._exact("argmax").argmax(*a, **kw)

    def argmin(self, *a: Any, **kw: Any) -> Any:
        return self._exact("argmin").argmin(*a, **kw)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocols probed with hasattr (cupy, numpy)
            raise AttributeError(name)
        raise UnsupportedReference(f"the array method .{name} (no rule for it)")

    # --- numpy's protocols: np.exp(traced), np.sum(traced), scipy.special.erf(traced) --------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        if kwargs.get("where", True) is not True:
            raise UnsupportedReference(f"{ufunc.__name__}(where=...)")
        kwargs.pop("where", None)
        name = ufunc.__name__
        if method == "__call__":
            rule = UFUNCS.get(name)
            if rule is None:
                raise UnsupportedReference(f"the ufunc {name} (no rule for it)")
            result = rule(*inputs, **kwargs)
        elif method == "reduce" and name in ("add", "maximum", "minimum"):
            (x,) = inputs
            axis = kwargs.get("axis", 0)
            keep = kwargs.get("keepdims", False)
            result = REDUCERS[name](x, axis=axis, keepdims=keep)
        elif method == "accumulate" and name == "add":
            result = RULES["cumsum"](inputs[0], axis=kwargs.get("axis", 0))
        else:
            raise UnsupportedReference(f"{name}.{method}")
        if out is not None:
            (target,) = out
            if not isinstance(target, Traced):
                raise UnsupportedReference(f"{name}(out=) into a plain array")
            return target._inplace(result)
        return result

    # --- cupy's protocol: a cupy ufunc called on a traced array (cupyx.scipy.special.erf) ------
    def __cupy_override_elementwise_kernel__(self, ufunc: Any, *inputs: Any, **kwargs: Any) -> Any:
        """A cupy ufunc (`cupy_exp`, `cupyx_scipy_special_erf`) given a traced array: the rule
        of the numpy ufunc of that name (cupy asks every argument for this before converting
        it, so a reference that calls cupyx's erf traces on the GPU as scipy's does on NumPy)."""
        name = str(getattr(ufunc, "name", "") or getattr(ufunc, "__name__", ""))
        for prefix in ("cupyx_scipy_special_", "cupy_"):
            if name.startswith(prefix):
                name = name[len(prefix) :]
                break
        return self.__array_ufunc__(_UfuncName(name), "__call__", *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        rule = FUNCS.get(func.__name__)
        if rule is None:
            raise UnsupportedReference(f"the function {func.__name__} (no rule for it)")
        return rule(*args, **kwargs)


# --- helpers -----------------------------------------------------------------------------


class _UfuncName:
    """A cupy ufunc as __array_ufunc__ reads one: its numpy name."""

    def __init__(self, name: str) -> None:
        self.__name__ = name


def _no_out(out: Any) -> None:
    if out is not None:
        raise UnsupportedReference("out= in a reduction")


def _ctx_of(*args: Any) -> _Ctx | None:
    for a in args:
        if isinstance(a, Traced):
            return a.ctx
        if isinstance(a, (list, tuple)):
            c = _ctx_of(*a)
            if c is not None:
                return c
    return None


def _need(*args: Any) -> _Ctx:
    ctx = _ctx_of(*args)
    if ctx is None:
        raise UnsupportedReference("a function of plain values inside the trace")
    return ctx


def _lift(ctx: _Ctx, a: Any) -> Traced:
    """A traced array from anything: constants get their float32 rounding as error."""
    if isinstance(a, Traced):
        return a
    if isinstance(a, Mask):
        if bool(a.amb.any()):
            a._refuse()
        a = a.b
    arr = ctx.xp.asarray(a)
    if arr.dtype.kind == "c":
        raise UnsupportedReference("complex values")
    return Traced(ctx, arr.astype(ctx.xp.float64), ctx.const_err(arr))


def _plain_index(idx: Any) -> Any:
    def one(i: Any) -> Any:
        if isinstance(i, Traced):
            return i._exact("an index")
        if isinstance(i, Mask):
            if bool(i.amb.any()):
                i._refuse()
            return i.b
        return i

    return tuple(one(i) for i in idx) if isinstance(idx, tuple) else one(idx)


def _both(x: Traced, fn: Callable[[Any], Any]) -> Traced:
    """A structural operation (reshape, transpose, slicing...): the same on value and error."""
    return Traced(x.ctx, fn(x.v), fn(x.e))
