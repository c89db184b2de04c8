"""rmsnorm, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402

EPS = np.float32(1e-6)


@variant(
    name="bug_tail",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the sum of squares skips the cols % 32 tail (a vector loop without its remainder)",
)
def bug_tail(x, w):
    x32 = f.f32(x)
    n = x.shape[-1]
    head = x32[..., : n - n % 32]
    ms = (head * head).sum(axis=-1, keepdims=True, dtype=np.float32) / np.float32(n)
    return f.out_as(x32 / np.sqrt(ms + EPS) * f.f32(w), x)


@variant(name="bug_no_weight", host=True, dtypes=["float32", "float16", "bfloat16"], about="forgets * w")
def bug_no_weight(x, w):
    x32 = f.f32(x)
    return f.out_as(x32 / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + EPS), x)


@variant(
    name="bug_acc16",
    host=True,
    dtypes=["float16", "bfloat16"],
    about="the sum of squares in the element type",
)
def bug_acc16(x, w):
    x32 = f.f32(x)
    ms = f.blocked_sum((x32 * x32).astype(x.dtype), x.dtype).astype(np.float32) / np.float32(x.shape[-1])
    return f.out_as(x32 / np.sqrt(ms + EPS)[..., None] * f.f32(w), x)
