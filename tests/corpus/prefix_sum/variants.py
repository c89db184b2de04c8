"""prefix_sum, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="np32",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="np.cumsum in float32 (sequential)",
)
def np32(x):
    return f.out_as(np.cumsum(f.f32(x), axis=-1, dtype=np.float32), x)


@variant(
    name="blocked",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="tiles of 256 (Hillis-Steele), then a look-back over the tiles' totals",
)
def blocked(x):
    return f.out_as(f.blocked_scan(f.f32(x)), x)
