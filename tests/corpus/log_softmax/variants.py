"""log_softmax, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32")
def np32(x):
    x32 = f.f32(x)
    d = x32 - x32.max(axis=-1, keepdims=True)
    return f.out_as(d - np.log(np.exp(d).sum(axis=-1, keepdims=True)), x)


@variant(
    name="online", host=True, dtypes=["float32", "float16", "bfloat16"], about="x - (max + log(sum)), online"
)
def online(x):
    x32 = f.f32(x)
    m, s = f.online_max_sum(x32)
    return f.out_as(x32 - (m + np.log(s))[..., None], x)
