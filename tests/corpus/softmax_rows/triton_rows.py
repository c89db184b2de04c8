"""softmax_rows in Triton: a program per row, the row in blocks of 1024 columns, three passes
(the max, the sum of tl.exp(x - max), the write); tl.exp is ex2.approx(x * log2 e), which
the tolerance allows for."""

import functools
import sys
from pathlib import Path

from cudabench.op import variant

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _launch  # noqa: E402


@functools.cache
def _kernel():
    global tl
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["cols"])
    def softmax_rows(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        x_row = x_ptr + row * cols
        out_row = out_ptr + row * cols
        offsets = tl.arange(0, BLOCK)
        top = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            x = tl.load(x_row + cs, mask=cs < cols, other=float("-inf")).to(tl.float32)
            top = tl.maximum(top, x)
        m = tl.max(top, axis=0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            mask = cs < cols
            x = tl.load(x_row + cs, mask=mask, other=0.0).to(tl.float32)
            acc += tl.where(mask, tl.exp(x - m), 0.0)
        inv = 1.0 / tl.sum(acc, axis=0)
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            mask = cs < cols
            x = tl.load(x_row + cs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_row + cs, (tl.exp(x - m) * inv).to(out_ptr.dtype.element_ty), mask=mask)

    return softmax_rows


@variant(
    name="triton",
    dtypes=["float32", "float16", "bfloat16"],
    writes=True,
    needs=("triton", "torch"),
    gpu=True,
    about="Triton - a program per row in blocks of 1024 columns, max, sum of tl.exp, then the write",
)
def triton_rows(x, out):
    kernel = _kernel()
    rows, cols = _launch.rows_of(x)

    def run(tx, tout):
        kernel[(rows,)](tx, tout, cols, BLOCK=_launch.BLOCK, num_warps=_launch.WARPS)

    _launch.launch((x, out), run)
