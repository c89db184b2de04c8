"""logsumexp, planted faults."""

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
    m = x32.max(axis=-1, keepdims=True)
    e = np.exp(x32 - m)
    e[..., -1] = 0 if x.shape[-1] > 1 else e[..., -1]
    return f.out_as((m + np.log(f.blocked_sum(e)[..., None]))[..., 0], x)


@variant(
    name="bug_half_exp", host=True, dtypes=["float32", "float16", "bfloat16"], about="exp at half precision"
)
def bug_half_exp(x):
    m, s = f.online_max_sum(f.f32(x), exp=f.half_exp)
    return f.out_as(m + np.log(s), x)


@variant(
    name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="the sum of exps in the element type"
)
def bug_acc16(x):
    x32 = f.f32(x)
    m = x32.max(axis=-1, keepdims=True)
    s = f.blocked_sum(np.exp(x32 - m).astype(x.dtype), x.dtype).astype(np.float32)
    return f.out_as(m[..., 0] + np.log(s), x)
