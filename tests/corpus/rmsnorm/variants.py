"""rmsnorm, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402

EPS = np.float32(1e-6)


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x, w):
    x32 = f.f32(x)
    scale = np.float32(1) / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + EPS)
    return f.out_as(x32 * scale * f.f32(w), x)


@variant(
    name="blocked", host=True, dtypes=["float32", "float16", "bfloat16"], about="per-thread sums then a tree"
)
def blocked(x, w):
    x32 = f.f32(x)
    ms = f.blocked_sum(x32 * x32) / np.float32(x.shape[-1])
    return f.out_as(x32 / np.sqrt(ms + EPS)[..., None] * f.f32(w), x)


@variant(
    name="sequential",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the sum of squares one element after another (a single thread)",
)
def sequential(x, w):
    x32 = f.f32(x)
    ms = f.sequential_sum(x32 * x32) / np.float32(x.shape[-1])
    return f.out_as(x32 / np.sqrt(ms + EPS)[..., None] * f.f32(w), x)
