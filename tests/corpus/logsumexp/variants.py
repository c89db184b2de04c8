"""logsumexp, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x):
    x32 = f.f32(x)
    m = x32.max(axis=-1, keepdims=True)
    return f.out_as((m + np.log(np.exp(x32 - m).sum(axis=-1, keepdims=True)))[..., 0], x)


@variant(
    name="online",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="one pass: per-thread running max and rescaled sum, then a tree",
)
def online(x):
    m, s = f.online_max_sum(f.f32(x))
    return f.out_as(m + np.log(s), x)


@variant(
    name="fast_exp",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="online, exp as __expf / Triton's exp2 (accepted: see RESULTS.md)",
)
def fast_exp(x):
    m, s = f.online_max_sum(f.f32(x), exp=f.fast_exp)
    return f.out_as(m + np.log(s), x)
