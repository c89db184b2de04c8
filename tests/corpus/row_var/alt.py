"""row_var, another formula (informative: no expectation)."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="alt_onepass",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="E[x^2] - E[x]^2 in float32 (one pass; cancels when |mean| >> std)",
)
def alt_onepass(x):
    x32 = f.f32(x)
    n = np.float32(x.shape[-1])
    m = f.blocked_sum(x32) / n
    return f.out_as(f.blocked_sum(x32 * x32) / n - m * m, x)
