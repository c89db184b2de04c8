"""The sums' rules: sum, mean, var, std, cumsum, max/min over an axis, sort, matmul, dot,
einsum, the vector norm: propagated errors plus the probabilistic rounding of the partial sums
(the package docstring's "The sums.")."""

from __future__ import annotations

import math
import string
from typing import Any

from cudabench.ops.errorbound.elementwise import (
    _UNARY,
    _pair,
    divide,
    multiply,
    subtract,
)
from cudabench.ops.errorbound.model import REDUCERS, ROUND_DIV, ROUND_MUL, UnsupportedReference, _Ctx
from cudabench.ops.errorbound.traced import RULES, Traced, _lift, _need, _no_out


def _random_order(xp: Any, n: Any, total: Any, sumsq: Any) -> Any:
    """E[sum of the partial sums S_m^2, m = 2..n] when n terms are added in a random order:
    sigma^2 (n(n+1)/6 - 1) + mu^2 (n(n+1)(2n+1)/6 - 1), mu and sigma^2 the terms' mean and
    (population) variance. `n` may be an array (the prefixes of a scan)."""
    n = xp.maximum(xp.asarray(n, dtype=xp.float64), 1.0)
    mu = total / n
    var = xp.maximum(sumsq / n - mu * mu, 0.0)
    r = var * (n * (n + 1) / 6 - 1) + mu * mu * (n * (n + 1) * (2 * n + 1) / 6 - 1)
    return xp.where(n >= 2, xp.maximum(r, 0.0), 0.0)


def _rounding(ctx: _Ctx, partial_sq: Any) -> Any:
    """The probabilistic rounding term of a sum: LAMBDA u sqrt(sum of the partial sums^2)."""
    return ctx.lam * ctx.u * ctx.xp.sqrt(partial_sq)


def _last(t: Traced, axis: Any) -> tuple[Any, int]:
    """The values with the reduced axes moved last and flattened into one (data order)."""
    v = t.v
    if axis is None:
        return v.reshape(1, -1), int(v.size)
    axes = tuple(a % v.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    keep = [a for a in range(v.ndim) if a not in axes]
    n = math.prod(v.shape[a] for a in axes)
    return v.transpose(*keep, *axes).reshape(*(v.shape[a] for a in keep), n), n


def sum(
    x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any
) -> Traced:
    """A sum of n terms t_i: sum e_i + LAMBDA u sqrt(max(Q_seq, Q_rand)): Q_seq the sum of
    S_k^2 over the partial sums S_k = t_1 + ... + t_k (k = 2..n, in the data's order), Q_rand
    its expectation in a random order (`_random_order`). Each of the n - 1 additions rounds
    its partial sum S by at most u|S|; those errors are independent and mean zero (Higham &
    Mary's model), so together within LAMBDA u sqrt(sum S^2) with probability about
    1 - 2 exp(-LAMBDA^2 / 2). Tree and per-thread orders have smaller partial sums than the
    sequential one, whether the data are in random order or structured along it."""
    ctx = _need(x)
    _no_out(out)
    t = _lift(ctx, x)
    xp = ctx.xp
    v = t.v.sum(axis=axis, keepdims=keepdims)
    flat, n = _last(t, axis)
    if n == 0:
        return Traced(ctx, v, t.e.sum(axis=axis, keepdims=keepdims))
    partial = xp.cumsum(flat, axis=-1)
    seq = (partial[..., 1:] ** 2).sum(axis=-1)
    rand = _random_order(xp, float(n), partial[..., -1], (flat * flat).sum(axis=-1))
    term = _rounding(ctx, xp.maximum(seq, rand)).reshape(v.shape)
    return Traced(ctx, v, t.e.sum(axis=axis, keepdims=keepdims) + term)


def _count(x: Traced, axis: Any) -> int:
    if axis is None:
        return x.size
    axes = axis if isinstance(axis, tuple) else (axis,)
    return math.prod(x.shape[a] for a in axes)


def mean(
    x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **kw: Any
) -> Traced:
    """sum / n: the sum's error / n + 2u|mean| (a division by n, or a multiply by 1/n)."""
    ctx = _need(x)
    t = _lift(ctx, x)
    n = _count(t, axis)
    s = sum(t, axis=axis, keepdims=keepdims)
    v = s.v / n
    return Traced(ctx, v, s.e / n + ROUND_DIV * ctx.u * ctx.xp.abs(v))


def var(
    x: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    **kw: Any,
) -> Traced:
    """Two-pass, as NumPy: sum(|x - mean(x)|^2) / (n - ddof), by the rules above."""
    ctx = _need(x)
    _no_out(out)
    t = _lift(ctx, x)
    n = _count(t, axis)
    d = subtract(t, mean(t, axis=axis, keepdims=True))
    s = sum(multiply(d, d), axis=axis, keepdims=keepdims)
    return divide(s, float(n - ddof))


def std(
    x: Any,
    axis: Any = None,
    dtype: Any = None,
    out: Any = None,
    ddof: int = 0,
    keepdims: bool = False,
    **kw: Any,
) -> Traced:
    return _UNARY["sqrt"](var(x, axis=axis, ddof=ddof, keepdims=keepdims))


def max(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
    """max over an axis: exact; the largest error among the terms."""
    ctx = _need(x)
    _no_out(out)
    t = _lift(ctx, x)
    return Traced(ctx, t.v.max(axis=axis, keepdims=keepdims), t.e.max(axis=axis, keepdims=keepdims))


def min(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Traced:
    """min over an axis: exact; the largest error among the terms."""
    ctx = _need(x)
    _no_out(out)
    t = _lift(ctx, x)
    return Traced(ctx, t.v.min(axis=axis, keepdims=keepdims), t.e.max(axis=axis, keepdims=keepdims))


REDUCERS.update({"add": sum, "maximum": max, "minimum": min})


def cumsum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Traced:
    """The k-th prefix: sum_{j<=k} e_j + LAMBDA u sqrt(max(Q_seq,k, Q_rand,k)), the sum's
    rule for the first k terms (a scan computes each prefix as a sum of its k terms)."""
    ctx = _need(x)
    _no_out(out)
    t = _lift(ctx, x)
    xp = ctx.xp
    if axis is None:
        t = t.reshape(-1)
        axis = 0
    axis = axis % t.ndim
    k = t.shape[axis]
    count = xp.arange(1, k + 1, dtype=xp.float64).reshape((k,) + (1,) * (t.ndim - axis - 1))
    partial = xp.cumsum(t.v, axis=axis)
    first = xp.take(partial, [0], axis=axis) ** 2
    seq = xp.cumsum(partial**2, axis=axis) - first
    rand = _random_order(xp, count, partial, xp.cumsum(t.v * t.v, axis=axis))
    e = xp.cumsum(t.e, axis=axis) + _rounding(ctx, xp.maximum(seq, rand))
    return Traced(ctx, partial, e)


def sort(x: Any, axis: Any = -1, **kw: Any) -> Traced:
    """Sorted values: each within the largest error along the axis (sorting is 1-Lipschitz
    in the max norm), no rounding."""
    ctx = _need(x)
    t = _lift(ctx, x)
    xp = ctx.xp
    if axis is None:
        t, axis = t.reshape(-1), 0
    e = xp.broadcast_to(t.e.max(axis=axis, keepdims=True), t.shape).copy()
    return Traced(ctx, xp.sort(t.v, axis=axis), e)


def _abs_or_zero(t: Traced) -> tuple[Any, bool]:
    return t.ctx.xp.abs(t.v), bool((t.e != 0).any())


def matmul(x: Any, y: Any, **kw: Any) -> Traced:
    """x @ y over k: |x| @ e_y + e_x @ |y| + e_x @ e_y + u |x| @ |y| (the products'
    roundings) + LAMBDA u sqrt(Q_rand) (the sum's, in a random order: a GEMM's K order
    is its tiling's; Q_rand from the products' mean x @ y / k and second moment
    x^2 @ y^2 / k)."""
    ctx, a, b = _pair(x, y)
    if a.ndim == 0 or b.ndim == 0:
        raise UnsupportedReference("matmul of a scalar")
    xp = ctx.xp
    k = a.shape[-1]
    A, ea = _abs_or_zero(a)
    B, eb = _abs_or_zero(b)
    v = xp.matmul(a.v, b.v)
    rand = _random_order(xp, float(k), v, xp.matmul(a.v * a.v, b.v * b.v))
    e = ROUND_MUL * ctx.u * xp.matmul(A, B) + _rounding(ctx, rand)
    if ea:
        e = e + xp.matmul(a.e, B)
    if eb:
        e = e + xp.matmul(A, b.e)
    if ea and eb:
        e = e + xp.matmul(a.e, b.e)
    return Traced(ctx, v, e)


def dot(x: Any, y: Any, **kw: Any) -> Traced:
    """np.dot for 1-D and 2-D arrays (matmul), a scalar (multiply)."""
    ctx, a, b = _pair(x, y)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if a.ndim > 2 or b.ndim > 2:
        raise UnsupportedReference("dot of arrays of more than 2 dimensions (use matmul or einsum)")
    return matmul(a, b)


def vdot(x: Any, y: Any, **kw: Any) -> Traced:
    return matmul(_lift(_need(x, y), x).reshape(-1), _lift(_need(x, y), y).reshape(-1))


def inner(x: Any, y: Any, **kw: Any) -> Traced:
    ctx, a, b = _pair(x, y)
    if a.ndim != 1 or b.ndim != 1:
        raise UnsupportedReference("inner of arrays other than 1-D")
    return matmul(a, b)


def einsum(subscripts: str, *operands: Any, **kw: Any) -> Traced:
    """One or two operands, explicit or implicit output, no ellipsis: a sum over the
    contracted indices' K terms, by the product's rule and the sum's in a random order
    (as matmul)."""
    ctx = _need(*operands)
    if kw or "..." in subscripts or len(operands) not in (1, 2):
        raise UnsupportedReference("einsum beyond one or two operands without ellipsis/options")
    xp = ctx.xp
    ins = subscripts.replace(" ", "").split("->")[0].split(",")
    if "->" in subscripts:
        out_ix = subscripts.replace(" ", "").split("->")[1]
    else:
        letters = "".join(ins)
        out_ix = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ts = [_lift(ctx, o) for o in operands]
    sizes: dict[str, int] = {}
    for ix, t in zip(ins, ts):
        if len(ix) != t.ndim or not set(ix) <= set(string.ascii_letters):
            raise UnsupportedReference(f"einsum subscripts {subscripts!r}")
        sizes.update(zip(ix, t.shape))
    k = float(math.prod(s for c, s in sizes.items() if c not in out_ix))
    if len(ts) == 1:
        (t,) = ts
        v = xp.einsum(subscripts, t.v)
        rand = _random_order(xp, k, v, xp.einsum(subscripts, t.v * t.v))
        return Traced(ctx, v, xp.einsum(subscripts, t.e) + _rounding(ctx, rand))
    a, b = ts
    A, ea = _abs_or_zero(a)
    B, eb = _abs_or_zero(b)
    v = xp.einsum(subscripts, a.v, b.v)
    rand = _random_order(xp, k, v, xp.einsum(subscripts, a.v * a.v, b.v * b.v))
    e = ROUND_MUL * ctx.u * xp.einsum(subscripts, A, B) + _rounding(ctx, rand)
    if ea:
        e = e + xp.einsum(subscripts, a.e, B)
    if eb:
        e = e + xp.einsum(subscripts, A, b.e)
    if ea and eb:
        e = e + xp.einsum(subscripts, a.e, b.e)
    return Traced(ctx, v, e)


def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Traced:
    """linalg.norm: the 2-norm of vectors (sqrt of the sum of squares) only."""
    ctx = _need(x)
    t = _lift(ctx, x)
    if ord not in (None, 2) or (axis is None and t.ndim != 1) or isinstance(axis, tuple):
        raise UnsupportedReference("linalg.norm other than the 2-norm of vectors")
    return _UNARY["sqrt"](sum(multiply(t, t), axis=axis, keepdims=keepdims))


RULES.update(sum=sum, mean=mean, var=var, std=std, max=max, min=min, cumsum=cumsum, matmul=matmul, dot=dot)
