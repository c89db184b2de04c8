"""row_var, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="x.var in float32 (two passes)"
)
def np32(x):
    return f.out_as(f.f32(x).var(axis=-1), x)


@variant(
    name="blocked",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="two passes of per-thread sums and a tree",
)
def blocked(x):
    x32 = f.f32(x)
    n = np.float32(x.shape[-1])
    d = x32 - (f.blocked_sum(x32) / n)[..., None]
    return f.out_as(f.blocked_sum(d * d) / n, x)


@variant(
    name="welford", host=True, dtypes=["float32", "float16", "bfloat16"], about="torch's Welford, one pass"
)
def welford(x):
    _, m2 = f.blocked_welford(f.f32(x))
    return f.out_as(m2 / np.float32(x.shape[-1]), x)
