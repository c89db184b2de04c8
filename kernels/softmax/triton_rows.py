"""softmax's first Python variant: a Triton kernel, one program per row, the whole row in
registers (Triton's fused-softmax tutorial), for rows of up to 8192 columns.

Triton launches on torch's current stream and takes tensors, so the arrays go to torch by
DLPack (no copy) and the launch runs on cudabench's own stream (torch.cuda.ExternalStream),
which is what the CUDA events and graphs time. triton and torch are imported when the
variant first runs, so this file imports without them (its row is then N/A, saying which).
"""

from __future__ import annotations

import functools
from typing import Any

from cudabench.op import variant

# rows of up to 8192 columns (requires= below): the row in one program's registers; and
# fewer than 2^31 rows: a program per row, and a launch's grid holds at most 2^31 - 1
# (`verify softmax` found 2^31 x 1 an OverflowError in Triton's launcher)


@functools.cache
def _kernel() -> Any:
    """The jitted kernel (Triton resolves `tl` among this module's globals)."""
    global tl
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_rows_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * cols + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

    return triton, softmax_rows_kernel


_launch: dict[tuple[int, ...], Any] = {}  # one input set at a time: its tensors and stream


@variant(name="triton_rows", dtypes=("float32", "float16", "bfloat16"), writes=True,
         needs=("triton", "torch"), gpu=True, requires={"max_cols": 8192, "max_rows": 2147483647},
         about="Triton: a program per row, the row in registers, exp and sum in float32 "
               "(rows up to 8192 columns)")
def triton_rows(x: Any, out: Any) -> None:
    import cupy
    import torch

    triton, kernel = _kernel()
    stream = cupy.cuda.get_current_stream().ptr
    key = (stream, id(x), id(out))
    if key not in _launch:  # tensors made once per input set, outside the timed calls
        _launch.clear()
        tensors = (torch.from_dlpack(x), torch.from_dlpack(out))
        _launch[key] = (x, out, tensors, torch.cuda.ExternalStream(stream))
    _, _, (tx, tout), torch_stream = _launch[key]
    cols = x.shape[-1]
    block = triton.next_power_of_2(cols)
    warps = 16 if block >= 8192 else 8 if block >= 2048 else 4
    with torch.cuda.stream(torch_stream):
        kernel[(x.size // cols,)](tx, tout, cols, BLOCK=block, num_warps=warps)
