"""dot, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_tail",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="skips the cols % 32 tail (a vector loop without its remainder)",
)
def bug_tail(x, y):
    n = x.shape[-1]
    p = f.f32(x) * f.f32(y)
    return f.out_as(f.blocked_sum(p[..., : n - n % 32]) if n >= 32 else np.zeros(p.shape[:-1], np.float32), x)


@variant(
    name="bug_drop_last",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the last product is left out",
)
def bug_drop_last(x, y):
    p = f.f32(x) * f.f32(y)
    p[..., -1] = 0
    return f.out_as(f.blocked_sum(p), x)


@variant(name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="accumulated in the element type")
def bug_acc16(x, y):
    return f.out_as(f.blocked_sum((f.f32(x) * f.f32(y)).astype(x.dtype), x.dtype).astype(np.float32), x)
