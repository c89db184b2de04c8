"""layernorm in Triton: a program per row, the row in blocks of 1024 columns, two passes for
the mean and the variance (float32 vectors summed by tl.sum), then the write."""

import functools
import sys
from pathlib import Path

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _launch  # noqa: E402

EPS = 1e-5


@functools.cache
def _kernel():
    global tl
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["cols"])
    def layernorm_rows(x_ptr, w_ptr, b_ptr, out_ptr, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        x_row = x_ptr + row * cols
        out_row = out_ptr + row * cols
        offsets = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            acc += tl.load(x_row + cs, mask=cs < cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / cols
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            mask = cs < cols
            d = tl.where(mask, tl.load(x_row + cs, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
            acc += d * d
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            mask = cs < cols
            x = tl.load(x_row + cs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cs, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cs, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(out_row + cs, y.to(out_ptr.dtype.element_ty), mask=mask)

    return layernorm_rows


@variant(
    name="triton",
    dtypes=["float32", "float16", "bfloat16"],
    writes=True,
    needs=("triton", "torch"),
    gpu=True,
    about="Triton - a program per row in blocks of 1024 columns, two passes (mean, variance), then the write",
)
def triton_rows(x, w, b, out):
    kernel = _kernel()
    rows, cols = _launch.rows_of(x)

    def run(tx, tw, tb, tout):
        kernel[(rows,)](tx, tw, tb, tout, cols, EPS, BLOCK=_launch.BLOCK, num_warps=_launch.WARPS)

    _launch.launch((x, w, b, out), run)
