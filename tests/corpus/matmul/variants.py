"""matmul, correct float32 variants."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(name="np32", host=True, dtypes=["float32", "float16", "bfloat16"], about="sgemm (BLAS, float32)")
def np32(A, B):
    return f.out_as(f.f32(A) @ f.f32(B), A)


@variant(
    name="split_k",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="K in chunks of 256, each a float32 product, the partials added in order",
)
def split_k(A, B):
    A32, B32 = f.f32(A), f.f32(B)
    k = A.shape[-1]
    acc = None
    for s in range(0, k, 256):
        part = A32[..., s : s + 256] @ B32[s : s + 256]
        acc = part if acc is None else (acc + part).astype(np.float32)
    return f.out_as(acc, A)
