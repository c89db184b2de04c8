# ruff: noqa: RUF012 - an op declares its tensors, rules and baselines as class attributes
"""What the ceilings' stream ops share (kernels/stream_read, stream_write, stream_copy,
stream_triad: `cudabench ceilings`, cudabench/record/ceilings.py): one op per traffic mix, since an
op fixes what its variants compute (the float64 reference) and the bytes they must move, and
those differ by mix.

The stream ops share one argument list, `(const T* a, const T* b, T* out, long long n)` (write
ignores a and b, copy ignores b), and two grid rules: `persistent`, GRID_K blocks per SM (0: as
many as are resident), each looping over the array; `tiles`, a block per BLOCK x UNROLL
16-byte vectors (kernels/common/stream.cuh). Their library baselines are the references a
card's ceilings are checked against: CUB's full-device sum (CuPy's `sum`), cudaMemset,
cudaMemcpy, and CuPy's (and torch's) triad.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cudabench.core.records import Shape
from cudabench.ops.api import (
    Dims,
    Geometry,
    Launching,
    Op,
    Scalar,
    Tensor,
    persistent,
    uniform,
    xp_of,
)
from cudabench.ops.protocol import tiles_grid

UNIT_ROUNDOFF = 2.0**-24


def _tiles(at: Launching) -> Geometry:
    return Geometry(tiles_grid(at.dims.n, at.block, at.variant, at.itemsize), at.block)


class Stream(Op):
    """One traffic mix: `reads` arrays read and `writes` written, element for element."""

    reads = 1
    writes = 1
    flops_an_element = 0  # the arithmetic a roofline counts (read's add, triad's FMA)
    dims = ("n",)
    ranks = (1,)
    example = "2^28"
    # every mix takes (a, b): one argument list for the four ops
    inputs = (Tensor("a", "n", fill=uniform(-1.0, 1.0)), Tensor("b", "n", fill=uniform(-1.0, 1.0)))
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    rules = {"persistent": persistent(), "tiles": _tiles}
    requirements: tuple[str, ...] = ()

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        n = math.prod(shape)
        return itemsize * (n * (self.reads + self.writes) + (1 if self.writes == 0 else 0))

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * math.prod(shape) * self.reads

    def flop_count(self, dims: Dims) -> int:
        return self.flops_an_element * dims.n

    def device_bytes(self, shape: Shape) -> int:
        n = math.prod(shape)
        # a, b, the output; the float64 reference and tolerance (and the checks' temporaries)
        return 4 * n * 3 + 3 * 8 * n + (64 << 20)


def memset_zeros(a: Any, b: Any) -> Any:
    """cudaMemsetAsync of a new array to zero bytes (0.0 in every float type)."""
    xp = xp_of(a)
    if xp is np:
        return np.zeros_like(a)
    out = xp.empty_like(a)
    xp.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, xp.cuda.get_current_stream().ptr)
    return out


def memcpy(a: Any, b: Any) -> Any:
    """cudaMemcpyAsync device to device into a new array."""
    xp = xp_of(a)
    if xp is np:
        return a.copy()
    out = xp.empty_like(a)
    rt = xp.cuda.runtime
    rt.memcpyAsync(
        out.data.ptr, a.data.ptr, a.nbytes, rt.memcpyDeviceToDevice, xp.cuda.get_current_stream().ptr
    )
    return out
