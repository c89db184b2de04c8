"""dot, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="NumPy in float32 (pairwise)"
)
def np32(x, y):
    return f.out_as((f.f32(x) * f.f32(y)).sum(axis=-1, dtype=np.float32), x)


@variant(
    name="blocked", host=True, dtypes=["float32", "float16", "bfloat16"], about="per-thread sums then a tree"
)
def blocked(x, y):
    return f.out_as(f.blocked_sum(f.f32(x) * f.f32(y)), x)


@variant(
    name="sequential", host=True, dtypes=["float32", "float16", "bfloat16"], about="one product after another"
)
def sequential(x, y):
    return f.out_as(f.sequential_sum(f.f32(x) * f.f32(y)), x)
