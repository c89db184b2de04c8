"""layernorm, planted faults (each a FAIL where its error is above float32's rounding)."""

import sys
from pathlib import Path

import numpy as np

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _f32 as f  # noqa: E402

EPS = np.float32(1e-5)


def _norm(x, w, b, ddof=0, eps_outside=False, bias=True, acc=np.float32):
    x32 = f.f32(x)
    n = x.shape[-1]
    mean = (f.blocked_sum(x, acc).astype(np.float32) / np.float32(n))[..., None]
    d = x32 - mean
    ss = f.blocked_sum((d * d).astype(acc) if acc is not np.float32 else d * d, acc).astype(np.float32)
    var = ss / np.float32(max(n - ddof, 1))
    denom = np.sqrt(var) + EPS if eps_outside else np.sqrt(var + EPS)
    y = d / denom[..., None] * f.f32(w)
    return f.out_as(y + f.f32(b) if bias else y, x)


@variant(name="bug_var_n1", host=True, dtypes=["float32", "float16", "bfloat16"], about="variance over n - 1")
def bug_var_n1(x, w, b):
    return _norm(x, w, b, ddof=1)


@variant(
    name="bug_eps_outside",
    host=True,
    dtypes=["float32", "float16", "bfloat16"],
    about="sqrt(var) + eps instead of sqrt(var + eps)",
)
def bug_eps_outside(x, w, b):
    return _norm(x, w, b, eps_outside=True)


@variant(name="bug_no_bias", host=True, dtypes=["float32", "float16", "bfloat16"], about="forgets + b")
def bug_no_bias(x, w, b):
    return _norm(x, w, b, bias=False)


@variant(
    name="bug_acc16", host=True, dtypes=["float16", "bfloat16"], about="sums accumulated in the element type"
)
def bug_acc16(x, w, b):
    return _norm(x, w, b, acc=x.dtype)
