"""The ceilings' ops (`cudabench ceilings`, cudabench/ceilings.py): what this card can move in
each traffic mix, and its fp32 FMA rate, measured by ordinary catalogue variants.

- `stream_read`: out[0] = sum of a (read only; one float written),
- `stream_write`: out = 0 (write only),
- `stream_copy`: out = a (one read, one write),
- `stream_triad`: out = a + 3 b (two reads, one write: STREAM's triad),
- `fma`: out = x + iters * 2^-10 by `iters` dependent FMAs a thread (compute only).

One op per mix, not one `stream` op with four variants: an op fixes what its variants compute
(the float64 reference) and the bytes they must move, and those differ by mix. The stream ops
share one argument list, `(const T* a, const T* b, T* out, long long n)` (write ignores a and
b, copy ignores b), and two grid rules: `persistent`, GRID_K blocks per SM (0: as many as are
resident), each looping over the array; `tiles`, a block per BLOCK x UNROLL 16-byte vectors
(kernels/common/stream.cuh). Their library baselines are the references a card's
ceilings are checked against: CUB's full-device sum (CuPy's `sum`), cudaMemset, cudaMemcpy,
and CuPy's (and torch's) triad.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudabench.ops import reduce, torch_baselines
from cudabench.ops.base import Geometry, array_module, persistent_grid, tiles_grid
from cudabench.spec import DeviceInfo, KernelVariant, Launch, Shape

UNIT_ROUNDOFF = 2.0**-24
TRIAD_SCALE = 3.0
MAX_GRID = 2**31 - 1
FMA_ITERS = 1024  # dependent FMAs a thread: 2048 flops for 8 bytes, far past any ridge point
FMA_STEP = 2.0**-10  # x + k * 2^-10 stays exact in float32 for |x| < 4 and k <= 1024


def _flat(shape: Shape) -> int:
    return math.prod(shape)



def _memset_zeros(inputs: tuple[Any, ...]) -> Any:
    """cudaMemsetAsync of a new array to zero bytes (0.0 in every float type)."""
    a = inputs[0]
    xp = array_module(a)
    if xp is np:
        return np.zeros_like(a)
    out = xp.empty_like(a)
    xp.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, xp.cuda.get_current_stream().ptr)
    return out


def _memcpy(inputs: tuple[Any, ...]) -> Any:
    """cudaMemcpyAsync device to device into a new array."""
    a = inputs[0]
    xp = array_module(a)
    if xp is np:
        return a.copy()
    out = xp.empty_like(a)
    rt = xp.cuda.runtime
    rt.memcpyAsync(out.data.ptr, a.data.ptr, a.nbytes, rt.memcpyDeviceToDevice,
                   xp.cuda.get_current_stream().ptr)  # fmt: skip
    return out


def _read_reference(xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
    return reduce.OP.expected(xp, inputs[:1])  # a sum of n: reduce's one row, its bound


def _write_reference(xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
    ref = xp.zeros(inputs[0].size, dtype=xp.float64)
    return ref, xp.full_like(ref, 1e-30)  # exact


def _copy_reference(xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
    ref = inputs[0].astype(xp.float64).reshape(-1)
    return ref, xp.full_like(ref, 1e-30)  # exact


def _triad_reference(xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
    a, b = (x.astype(xp.float64).reshape(-1) for x in inputs)
    ref = a + TRIAD_SCALE * b  # one FMA rounds once; a multiply and an add, twice
    return ref, xp.maximum(2 * UNIT_ROUNDOFF * (xp.abs(a) + TRIAD_SCALE * xp.abs(b)), 1e-30)


def _triad_libraries() -> dict[str, Callable[[tuple[Any, ...]], Any]]:
    found = {"cupy": lambda inputs: inputs[0] + TRIAD_SCALE * inputs[1]}
    if torch_baselines.available():
        found["torch"] = torch_baselines.call(lambda a, b: a.add(b, alpha=TRIAD_SCALE))
    return found


@dataclass(frozen=True)
class Stream:
    """One traffic mix: `reads` arrays read and `writes` written, element for element, what
    the result must be (`exact`: float64 reference and tolerance from the inputs), the library
    references, and the arithmetic a roofline counts (read's add, triad's FMA)."""

    name: str
    about: str
    reads: int
    writes: int
    exact: Callable[[Any, tuple[Any, ...]], tuple[Any, Any]]
    libraries: Callable[[], dict[str, Callable[[tuple[Any, ...]], Any]]]
    flops_an_element: int = 0
    grid_rules: tuple[str, ...] = ("persistent", "tiles")
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        if len(shape) != 1:
            raise ValueError(f"{self.name} takes a 1-D shape (n elements), got {len(shape)}-D")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return (1,) if self.writes == 0 else shape

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        n = _flat(shape)
        return itemsize * (n * (self.reads + self.writes) + (1 if self.writes == 0 else 0))

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * _flat(shape) * self.reads

    def arithmetic(self, shape: Shape) -> int:
        return self.flops_an_element * _flat(shape)

    def device_bytes(self, shape: Shape) -> int:
        n = _flat(shape)
        # a, b, the output; the float64 reference and tolerance (and the checks' temporaries)
        return 4 * n * 3 + 3 * 8 * n + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        rng = xp.random.default_rng(seed)
        inputs = []
        for _ in range(2):  # every mix takes (a, b): one argument list for the four ops
            x = rng.random(shape, dtype=xp.float32)
            x *= 2
            x -= 1
            inputs.append(x)
        return tuple(inputs)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        return self.exact(xp, inputs)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        if launch.grid == "tiles":
            return Geometry(tiles_grid(_flat(shape), launch.block, variant, itemsize), launch.block)
        if launch.grid != "persistent":
            raise ValueError(f"{variant.path}:{variant.header_line}: unknown grid rule "
                             f"{launch.grid!r} ({self.name} knows: {', '.join(self.grid_rules)})")  # fmt: skip
        return Geometry(persistent_grid(device, variant, blocks_per_sm), launch.block)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        a, b = inputs
        return (a, b, out, np.int64(a.size))

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        return self.libraries()


class Fma:
    """The fp32 FMA rate: FMA_ITERS dependent FMAs a thread, in registers."""

    name = "fma"
    about = f"out = x + {FMA_ITERS} x 2^-10 by {FMA_ITERS} dependent fp32 FMAs a thread (the fp32 ceiling)"
    grid_rules = ("elements",)
    requirements: tuple[str, ...] = ()

    def check_shape(self, shape: Shape) -> None:
        if len(shape) != 1:
            raise ValueError(f"fma takes a 1-D shape (n threads), got {len(shape)}-D")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return shape

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        return 4 * 2 * _flat(shape)

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return 4 * _flat(shape)

    def flops(self, shape: Shape) -> int:
        return 2 * FMA_ITERS * _flat(shape)

    def arithmetic(self, shape: Shape) -> int:
        return self.flops(shape)

    def device_bytes(self, shape: Shape) -> int:
        return 4 * 2 * _flat(shape) + 3 * 8 * _flat(shape) + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        x = xp.random.default_rng(seed).random(shape, dtype=xp.float32)
        x *= 6
        x -= 3  # |x| < 3: x + 1 stays under 4, where adding 2^-10 is exact in float32
        return (x,)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        ref = inputs[0].astype(xp.float64).reshape(-1) + FMA_ITERS * FMA_STEP
        # Each step is exact when x is a multiple of its ulp near 4 (the inputs are); a few
        # ulps allow for any other x, and one FMA too few (2^-10) is still far outside.
        return ref, 4 * UNIT_ROUNDOFF * xp.maximum(xp.abs(ref), 1.0)

    def geometry(self, launch: Launch, variant: KernelVariant, shape: Shape,
                 device: DeviceInfo, blocks_per_sm: int, itemsize: int = 4) -> Geometry:  # fmt: skip
        if launch.grid != "elements":
            raise ValueError(f"{variant.path}:{variant.header_line}: unknown grid rule "
                             f"{launch.grid!r} (fma knows: elements)")  # fmt: skip
        grid = max(1, math.ceil(_flat(shape) / launch.block))
        if grid > MAX_GRID:
            raise ValueError(f"grid of {grid} blocks exceeds the CUDA limit {MAX_GRID}")
        return Geometry(grid, launch.block)

    def kernel_args(self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any],
                    geometry: Geometry) -> tuple[Any, ...]:  # fmt: skip
        (x,) = inputs
        return (x, out, np.int64(x.size), np.int32(FMA_ITERS), np.float32(1.0),
                np.float32(FMA_STEP))  # fmt: skip

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        return {}


READ = Stream("stream_read", "out = sum(a): the read ceiling (a block sum and an atomicAdd a block)",
              1, 0, _read_reference, lambda: {"cupy": lambda inputs: inputs[0].sum(keepdims=True)},
              flops_an_element=1)  # the references: CUB's device sum (CuPy's), cudaMemset, cudaMemcpy
WRITE = Stream("stream_write", "out = 0: the write ceiling", 0, 1, _write_reference,
               lambda: {"memset": _memset_zeros})
COPY = Stream("stream_copy", "out = a: the copy ceiling (one read, one write)", 1, 1,
              _copy_reference, lambda: {"memcpy": _memcpy})
TRIAD = Stream("stream_triad", "out = a + 3 b: the triad ceiling (two reads, one write)", 2, 1,
               _triad_reference, _triad_libraries, flops_an_element=2)
FMA = Fma()
