"""silu, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_tanh_sigmoid",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="sigmoid as 0.5 + 0.5 tanh(x / 2): cancels for x << 0",
)
def bug_tanh_sigmoid(x):
    x32 = f.f32(x)
    return f.out_as(x32 * (np.float32(0.5) + np.float32(0.5) * np.tanh(np.float32(0.5) * x32)), x)


@variant(
    name="bug_half_exp",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="exp at half precision (10-bit mantissa)",
)
def bug_half_exp(x):
    x32 = f.f32(x)
    return f.out_as(x32 / (np.float32(1) + f.half_exp(-x32)), x)
