"""layernorm, correct float32 variants: NumPy's expression, a block-per-row kernel's sums,
and torch's Welford."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402

EPS = np.float32(1e-5)


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x, w, b):
    x32 = f.f32(x)
    mean = x32.mean(axis=-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(axis=-1, keepdims=True)
    return f.out_as((x32 - mean) / np.sqrt(var + EPS) * f.f32(w) + f.f32(b), x)


@variant(
    name="blocked",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="a block per row: per-thread sums then a tree, rsqrt, x * rstd * w + b",
)
def blocked(x, w, b):
    x32 = f.f32(x)
    n = np.float32(x.shape[-1])
    mean = (f.blocked_sum(x32) / n)[..., None]
    d = x32 - mean
    rstd = np.float32(1) / np.sqrt(f.blocked_sum(d * d) / n + EPS)
    return f.out_as(d * rstd[..., None] * f.f32(w) + f.f32(b), x)


@variant(
    name="welford",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="torch's way: Welford per thread, Chan's combination, one pass",
)
def welford(x, w, b):
    x32 = f.f32(x)
    mean, m2 = f.blocked_welford(x32)
    rstd = np.float32(1) / np.sqrt(m2 / np.float32(x.shape[-1]) + EPS)
    return f.out_as((x32 - mean[..., None]) * rstd[..., None] * f.f32(w) + f.f32(b), x)
