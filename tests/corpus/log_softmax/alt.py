"""log_softmax, another formula (informative: no expectation)."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="alt_log_of_softmax",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="log(softmax(x)): the log of a rounded quotient",
)
def alt_log_of_softmax(x):
    x32 = f.f32(x)
    e = np.exp(x32 - x32.max(axis=-1, keepdims=True))
    return f.out_as(np.log(e / e.sum(axis=-1, keepdims=True)), x)
