"""silu, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="x / (1 + exp(-x)) in float32"
)
def np32(x):
    x32 = f.f32(x)
    return f.out_as(x32 / (np.float32(1) + np.exp(-x32)), x)


@variant(
    name="sigmoid_mul",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="x * (1 / (1 + exp(-x))): a reciprocal, then a multiply",
)
def sigmoid_mul(x):
    x32 = f.f32(x)
    return f.out_as(x32 * (np.float32(1) / (np.float32(1) + np.exp(-x32))), x)


@variant(
    name="fast_exp",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="exp as __expf / Triton: ex2.approx(x * log2 e) (accepted: see RESULTS.md)",
)
def fast_exp(x):
    x32 = f.f32(x)
    return f.out_as(x32 / (np.float32(1) + f.fast_exp(-x32)), x)
