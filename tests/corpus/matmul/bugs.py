"""matmul, planted faults."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402


@variant(
    name="bug_k_tail",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="K tiled by 32 without the K % 32 remainder",
)
def bug_k_tail(A, B):
    k = A.shape[-1]
    k32 = k - k % 32
    A32, B32 = f.f32(A), f.f32(B)
    C = A32[..., :k32] @ B32[:k32] if k32 else np.zeros(A32.shape[:-1] + B32.shape[1:], np.float32)
    return f.out_as(C, A)


@variant(
    name="bug_acc16",
    host=True,
    dtypes=["float16", "bfloat16"],
    about="the accumulator in the element type (rounded after every K tile of 32)",
)
def bug_acc16(A, B):
    A32, B32 = f.f32(A), f.f32(B)
    acc = None
    for s in range(0, A.shape[-1], 32):
        part = A32[..., s : s + 32] @ B32[s : s + 32]
        acc = part.astype(A.dtype) if acc is None else (acc.astype(np.float32) + part).astype(A.dtype)
    return f.out_as(acc.astype(np.float32), A)
