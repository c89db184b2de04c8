"""prefix_sum, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_exclusive", host=True, dtypes=["float32", "float16", "bfloat16"], about="an exclusive scan"
)
def bug_exclusive(x):
    s = f.blocked_scan(f.f32(x))
    return f.out_as(s - f.f32(x), x)


@variant(
    name="bug_drop_last",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the last element of each row is left out (the last output repeats the one before)",
)
def bug_drop_last(x):
    s = f.blocked_scan(f.f32(x))
    s[..., -1] = s[..., -2] if x.shape[-1] > 1 else 0
    return f.out_as(s, x)


@variant(
    name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="the running sums in the element type"
)
def bug_acc16(x):
    return f.out_as(f.blocked_scan(x, acc=x.dtype).astype(np.float32), x)
