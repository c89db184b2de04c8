"""gelu, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402
from scipy.special import erf, erfc  # noqa: E402


@variant(
    name="np32",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="0.5 x (1 + erf(x / sqrt 2)) in float32, as torch's kernel",
)
def np32(x):
    x32 = f.f32(x)
    return f.out_as(np.float32(0.5) * x32 * (np.float32(1) + erf(x32 * np.float32(0.70710678))), x)


@variant(
    name="erfc_form",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="0.5 x erfc(-x / sqrt 2) in float32 (no cancellation)",
)
def erfc_form(x):
    x32 = f.f32(x)
    return f.out_as(np.float32(0.5) * x32 * erfc(-x32 * np.float32(0.70710678)), x)
