"""gelu, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_tanh_approx",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="the tanh approximation instead of erf",
)
def bug_tanh_approx(x):
    x32 = f.f32(x)
    inner = np.float32(0.7978845608) * (x32 + np.float32(0.044715) * x32 * x32 * x32)
    return f.out_as(np.float32(0.5) * x32 * (np.float32(1) + np.tanh(inner)), x)


@variant(
    name="bug_erf_as",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="Abramowitz-Stegun 7.1.26 erf (|error| <= 1.5e-7)",
)
def bug_erf_as(x):
    x32 = f.f32(x)
    return f.out_as(np.float32(0.5) * x32 * (np.float32(1) + f.erf_as(x32 * np.float32(0.70710678))), x)
