"""softmax_rows, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x):
    x32 = f.f32(x)
    e = np.exp(x32 - x32.max(axis=-1, keepdims=True))
    return f.out_as(e / e.sum(axis=-1, keepdims=True), x)


@variant(
    name="online",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="online max and sum, then exp(x - max) * (1 / sum)",
)
def online(x):
    x32 = f.f32(x)
    m, s = f.online_max_sum(x32)
    return f.out_as(np.exp(x32 - m[..., None]) * (np.float32(1) / s)[..., None], x)


@variant(
    name="fast_exp",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="online, exp as __expf / Triton's exp2 (accepted: see RESULTS.md)",
)
def fast_exp(x):
    x32 = f.f32(x)
    m, s = f.online_max_sum(x32, exp=f.fast_exp)
    return f.out_as(f.fast_exp(x32 - m[..., None]) / s[..., None], x)
