"""l2norm, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x):
    x32 = f.f32(x)
    return f.out_as(x32 / np.maximum(np.linalg.norm(x32, axis=-1, keepdims=True), np.float32(1e-12)), x)


@variant(
    name="blocked_rsqrt",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="per-thread sums then a tree; x * rsqrt(sum)",
)
def blocked_rsqrt(x):
    x32 = f.f32(x)
    s = f.blocked_sum(x32 * x32)
    return f.out_as(x32 * (np.float32(1) / np.sqrt(s))[..., None], x)
