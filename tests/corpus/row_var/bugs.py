"""row_var, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_n1",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="over n - 1 (the sample variance)",
)
def bug_n1(x):
    n = x.shape[-1]
    return f.out_as(f.f32(x).var(axis=-1, ddof=1 if n > 1 else 0), x)


@variant(name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="the sums in the element type")
def bug_acc16(x):
    x32 = f.f32(x)
    n = np.float32(x.shape[-1])
    mean = f.blocked_sum(x, x.dtype).astype(np.float32) / n
    d = x32 - mean[..., None]
    return f.out_as(f.blocked_sum((d * d).astype(x.dtype), x.dtype).astype(np.float32) / n, x)
