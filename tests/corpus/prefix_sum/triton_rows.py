"""prefix_sum in Triton: a program per row, the row in blocks of 1024 columns, each block's
tl.cumsum (a parallel scan) plus the running total of the blocks before it."""

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
    def scan_rows(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        x_row = x_ptr + row * cols
        out_row = out_ptr + row * cols
        offsets = tl.arange(0, BLOCK)
        carry = tl.sum(tl.zeros([BLOCK], dtype=tl.float32), axis=0)  # a float32 scalar, 0
        for start in range(0, cols, BLOCK):
            cs = start + offsets
            mask = cs < cols
            x = tl.load(x_row + cs, mask=mask, other=0.0).to(tl.float32)
            s = tl.cumsum(x, axis=0) + carry
            tl.store(out_row + cs, s.to(out_ptr.dtype.element_ty), mask=mask)
            carry += tl.sum(x, axis=0)

    return scan_rows


@variant(
    name="triton",
    dtypes=["float32", "float16", "bfloat16"],
    writes=True,
    needs=("triton", "torch"),
    gpu=True,
    about="Triton - a program per row in blocks of 1024 columns, tl.cumsum plus the running total",
)
def triton_rows(x, out):
    kernel = _kernel()
    rows, cols = _launch.rows_of(x)

    def run(tx, tout):
        kernel[(rows,)](tx, tout, cols, BLOCK=_launch.BLOCK, num_warps=_launch.WARPS)

    _launch.launch((x, out), run)
