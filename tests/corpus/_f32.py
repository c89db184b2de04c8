"""Float32 building blocks the corpus's Python variants share (NumPy, vectorised over rows):
the summation orders a GPU kernel uses, and the planted faults' arithmetic. Not a variant
file (its name starts with `_`); the variant files import it by path."""

from __future__ import annotations

from typing import Any

import numpy as np

F32 = np.float32
THREADS = 256  # a block per row: thread t owns elements t, t + 256, t + 512, ...
LOG2E = 1.4426950408889634


def f32(x: Any) -> Any:
    """The kernel's loads: the stored element type widened to float32."""
    return np.asarray(x).astype(F32)


def as_rows(x: Any) -> Any:
    """A 2-D (rows, cols) view of the last axis."""
    return x.reshape(-1, x.shape[-1])


def _strided(x2: Any, acc: Any, fill: float = 0.0) -> Any:
    """(rows, m, THREADS): each row padded with `fill`, thread t's elements down axis 1."""
    rows, n = x2.shape
    m = -(-n // THREADS)
    padded = np.full((rows, m * THREADS), fill, dtype=acc)
    padded[:, :n] = x2.astype(acc)
    return padded.reshape(rows, m, THREADS)


def _tree(s: Any, combine: Any = None) -> Any:
    """A shared-memory tree over the last axis (THREADS wide): s[t] += s[t + half]."""
    t = s.shape[-1]
    while t > 1:
        t //= 2
        s = s[..., :t] + s[..., t : 2 * t] if combine is None else combine(s[..., :t], s[..., t : 2 * t])
    return s[..., 0]


def blocked_sum(x: Any, acc: Any = F32) -> Any:
    """Row sums as a block-per-row kernel: a per-thread sequential sum, then a tree, every
    addition rounded to `acc` (float32; the element type for an accumulate-in-16-bit bug)."""
    x3 = _strided(as_rows(x), acc)
    s = np.zeros((x3.shape[0], THREADS), dtype=acc)
    for j in range(x3.shape[1]):
        s += x3[:, j, :]
    return _tree(s).reshape(x.shape[:-1])


def sequential_sum(x: Any, acc: Any = F32) -> Any:
    """Row sums, one element after another (a single thread, an atomicAdd chain)."""
    return np.cumsum(x.astype(acc), axis=-1, dtype=acc)[..., -1]


def blocked_scan(x: Any, acc: Any = F32, tile: int = 256) -> Any:
    """Inclusive prefix sums along rows as a GPU scan: Hillis-Steele within tiles of 256,
    then each tile adds the running total of the tiles before it (a sequential look-back)."""
    x2 = as_rows(x)
    rows, n = x2.shape
    m = -(-n // tile)
    s = np.zeros((rows, m * tile), dtype=acc)
    s[:, :n] = x2.astype(acc)
    s = s.reshape(rows, m, tile)
    d = 1
    while d < tile:
        s[:, :, d:] = s[:, :, d:] + s[:, :, :-d]
        d *= 2
    totals = s[:, :, -1]
    carry = np.zeros((rows, m), dtype=acc)
    carry[:, 1:] = np.cumsum(totals, axis=1, dtype=acc)[:, :-1]
    return (s + carry[:, :, None]).reshape(rows, m * tile)[:, :n].reshape(x.shape)


def blocked_welford(x: Any) -> tuple[Any, Any]:
    """(mean, M2) per row as torch's kernels: Welford per thread, then Chan's combination
    down a tree, in float32."""
    x2 = as_rows(x)
    rows, n = x2.shape
    x3 = _strided(x2, F32)
    count = np.zeros((rows, THREADS), F32)
    mean = np.zeros((rows, THREADS), F32)
    m2 = np.zeros((rows, THREADS), F32)
    for j in range(x3.shape[1]):
        live = (j * THREADS + np.arange(THREADS)) < n
        v = x3[:, j, :]
        c = count + F32(1)
        delta = v - mean
        new_mean = mean + delta / c
        new_m2 = m2 + delta * (v - new_mean)
        count = np.where(live, c, count)
        mean = np.where(live, new_mean, mean)
        m2 = np.where(live, new_m2, m2)

    def chan(a: Any, b: Any) -> Any:
        (ca, ma, qa), (cb, mb, qb) = a, b
        c = ca + cb
        safe = np.where(c > 0, c, F32(1))
        delta = mb - ma
        return (c, np.where(c > 0, ma + delta * (cb / safe), ma),
                np.where(c > 0, qa + qb + delta * delta * (ca * cb / safe), qa))  # fmt: skip

    t = THREADS
    parts = (count, mean, m2)
    while t > 1:
        t //= 2
        parts = chan(tuple(p[:, :t] for p in parts), tuple(p[:, t : 2 * t] for p in parts))
    return parts[1][:, 0].reshape(x.shape[:-1]), parts[2][:, 0].reshape(x.shape[:-1])


def online_max_sum(x: Any, exp: Any = np.exp) -> tuple[Any, Any]:
    """(max, sum of exp(x - max)) per row in one pass, as an online-softmax kernel: each
    thread keeps a running max and rescales its sum when the max grows, then a tree combines
    (max, sum) pairs. float32 throughout."""
    x3 = _strided(as_rows(x), F32, fill=-np.inf)
    rows = x3.shape[0]
    m = np.full((rows, THREADS), -np.inf, F32)
    s = np.zeros((rows, THREADS), F32)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(x3.shape[1]):
            v = x3[:, j, :]
            new = np.maximum(m, v)
            live = new > -np.inf
            scaled = np.where(live, s * exp(np.where(live, m - new, F32(0))), F32(0))
            s = np.where(live, scaled + exp(np.where(live, v - new, F32(0))), s)
            m = new

        def combine(a: Any, b: Any) -> Any:
            (ma, sa), (mb, sb) = a, b
            mm = np.maximum(ma, mb)
            live = mm > -np.inf
            fa = np.where(live & (ma > -np.inf), exp(np.where(live, ma - mm, F32(0))), F32(0))
            fb = np.where(live & (mb > -np.inf), exp(np.where(live, mb - mm, F32(0))), F32(0))
            return mm, sa * fa + sb * fb

        t = THREADS
        pair = (m, s)
        while t > 1:
            t //= 2
            pair = combine(tuple(p[:, :t] for p in pair), tuple(p[:, t : 2 * t] for p in pair))
    shape = x.shape[:-1]
    return pair[0][:, 0].reshape(shape), pair[1][:, 0].reshape(shape)


def fast_exp(x: Any) -> Any:
    """__expf (fast math; Triton's exp2-based softmax): ex2.approx(x * 1.4427f), the product
    rounded to float32, ex2.approx's error emulated by clearing the result's last bit."""
    y = (f32(x) * F32(LOG2E)).astype(F32)
    r = np.exp2(y.astype(np.float64)).astype(F32)
    return (r.view(np.uint32) & np.uint32(0xFFFFFFFE)).view(F32)


def half_exp(x: Any) -> Any:
    """An exp at half precision in float32's range (ex2.approx.f16's 2^-9.9, a 10-bit table):
    the mantissa cut to 10 bits (a planted fault)."""
    r = np.exp(f32(x))
    return (r.view(np.uint32) & np.uint32(0xFFFFE000)).view(F32)


def erf_as(x: Any) -> Any:
    """Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): an erf a reviewer might accept."""
    x = f32(x)
    a = np.abs(x)
    t = F32(1) / (F32(1) + F32(0.3275911) * a)
    poly = t * (F32(0.254829592) + t * (F32(-0.284496736) + t * (F32(1.421413741)
            + t * (F32(-1.453152027) + t * F32(1.061405429)))))  # fmt: skip
    return np.sign(x) * (F32(1) - poly * np.exp(-a * a))


def out_as(y: Any, x: Any) -> Any:
    """The kernel's store: float32 rounded once to the element type."""
    return np.asarray(y, dtype=F32).astype(x.dtype)
