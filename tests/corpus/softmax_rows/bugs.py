"""softmax_rows, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_drop_last",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the sum misses the last term",
)
def bug_drop_last(x):
    x32 = f.f32(x)
    e = np.exp(x32 - x32.max(axis=-1, keepdims=True))
    last = e[..., -1].copy()
    if x.shape[-1] > 1:
        e[..., -1] = 0
    s = f.blocked_sum(e)[..., None]
    e[..., -1] = last
    return f.out_as(e / s, x)


@variant(
    name="bug_half_exp", host=True, dtypes=["float32", "float16", "bfloat16"], about="exp at half precision"
)
def bug_half_exp(x):
    x32 = f.f32(x)
    e = f.half_exp(x32 - x32.max(axis=-1, keepdims=True))
    return f.out_as(e / f.blocked_sum(e)[..., None], x)


@variant(
    name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="the sum of exps in the element type"
)
def bug_acc16(x):
    x32 = f.f32(x)
    e = np.exp(x32 - x32.max(axis=-1, keepdims=True))
    return f.out_as(e / f.blocked_sum(e.astype(x.dtype), x.dtype).astype(np.float32)[..., None], x)
