"""l2norm, planted faults."""

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
    about="the norm skips the cols % 32 tail",
)
def bug_tail(x):
    x32 = f.f32(x)
    n = x.shape[-1]
    head = x32[..., : n - n % 32] if n >= 32 else x32
    s = (head * head).sum(axis=-1, keepdims=True, dtype=np.float32)
    return f.out_as(x32 / np.sqrt(s), x)


@variant(
    name="bug_acc16",
    host=True,
    dtypes=["float16", "bfloat16"],
    about="the sum of squares in the element type",
)
def bug_acc16(x):
    x32 = f.f32(x)
    s = f.blocked_sum((x32 * x32).astype(x.dtype), x.dtype).astype(np.float32)
    return f.out_as(x32 / np.sqrt(s)[..., None], x)
