"""gelu in Triton: a program per 1024 elements, 0.5 x (1 + erf(x / sqrt 2)) in float32."""

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

    @triton.jit(do_not_specialize=["n"])
    def gelu_map(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * BLOCK
        offsets = start + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
        tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

    return gelu_map


@variant(
    name="triton",
    dtypes=["float32", "float16", "bfloat16"],
    writes=True,
    needs=("triton", "torch"),
    gpu=True,
    about="Triton - a program per 1024 elements, 0.5 x (1 + erf(x / sqrt 2)) in float32",
)
def triton_map(x, out):
    kernel = _kernel()
    n = int(x.size)

    def run(tx, tout):
        kernel[(-(-n // _launch.BLOCK),)](tx, tout, n, BLOCK=_launch.BLOCK, num_warps=_launch.WARPS)

    _launch.launch((x, out), run)
