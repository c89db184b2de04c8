"""Grid rules: how a launch named in a .cu header covers an op's problem.

A rule is a function of one `Launching` (the case's dimensions, the launch's block, the
variant's parameters, the device and the kernel's occupancy) that returns a `Geometry`
(ops/base.py): grid, block, and what the rule decides besides (scalars passed after the op's
own arguments, workspace arrays, dynamic shared memory). An op names its rules in `rules`
(cudabench/op.py); a header's `grid:` picks one by name, never by evaluating text.

The stock rules cover the usual layouts: `elements` (a thread an element), `packs` (a thread
per 16 bytes), `warp_rows` (a warp a row), `block_rows` (a block a row), `tiles` (2-D tiles),
`persistent` (a fixed number of blocks per SM, each looping). Each checks the CUDA grid limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from cudabench.core.records import DeviceInfo, KernelVariant, Launch, Shape
from cudabench.ops.protocol import Geometry, persistent_grid

MAX_GRID_X = 2**31 - 1
MAX_GRID_Y = 65535


class Dims(Mapping[str, int]):
    """The case's dimensions by name, read as `d["rows"]` or `d.rows`."""

    def __init__(self, values: Mapping[str, int]) -> None:
        self._values = dict(values)

    def __getitem__(self, name: str) -> int:
        return self._values[name]

    def __getattr__(self, name: str) -> int:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no dimension {name!r} (dims: {', '.join(self._values)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Dims({self._values})"


@dataclass(frozen=True)
class Launching:
    """Everything a grid rule may use for one launch of one variant on one case."""

    op: str  # the op's name, for error messages
    dims: Dims
    shape: Shape  # the case's shape as given (before it was mapped onto the dims)
    launch: Launch
    variant: KernelVariant
    device: DeviceInfo
    blocks_per_sm: int  # the variant's least occupancy: resident blocks per SM
    itemsize: int  # bytes per element of the case's dtype

    @property
    def block(self) -> int:
        """Threads per block (the header's `block:`, or its parameter's value)."""
        return self.launch.block

    def value(self, name: str, default: int) -> int:
        """The variant's value of a tunable parameter (`params:` in its header), or default."""
        return self.variant.value(name, default)

    def error(self, message: str) -> ValueError:
        """A one-line error naming the variant's header."""
        return ValueError(f"{self.variant.path}:{self.variant.header_line}: {message}")


GridRule = Callable[[Launching], Geometry]


def check_grid(grid: int | tuple[int, ...]) -> None:
    """ValueError when a grid passes the CUDA limits (2^31 - 1 blocks along x, 65535 along y)."""
    x, y = (grid, 1) if isinstance(grid, int) else (grid[0], grid[1])
    if x > MAX_GRID_X or y > MAX_GRID_Y:
        raise ValueError(f"grid {grid} exceeds the CUDA limits ({MAX_GRID_X} x {MAX_GRID_Y})")


def elements(per_thread: int = 1) -> GridRule:
    """A thread per `per_thread` elements of the whole problem (the product of the dims)."""

    def rule(at: Launching) -> Geometry:
        n = math.prod(at.dims.values())
        grid = max(1, math.ceil(math.ceil(n / per_thread) / at.block))
        check_grid(grid)
        return Geometry(grid, at.block)

    return rule


def packs(pack_bytes: int = 16) -> GridRule:
    """A thread per `pack_bytes` of elements (16: 4 floats or 8 halves, a vector load)."""

    def rule(at: Launching) -> Geometry:
        return elements(max(1, pack_bytes // at.itemsize))(at)

    return rule


def warp_rows(rows: str = "rows", per_warp: int = 1) -> GridRule:
    """A warp per `per_warp` rows (the dim named `rows`); the grid covers them all."""

    def rule(at: Launching) -> Geometry:
        grid = math.ceil(at.dims[rows] / per_warp / (at.block // 32))
        check_grid(grid)
        return Geometry(grid, at.block)

    return rule


def block_rows(rows: str = "rows") -> GridRule:
    """A block per row (the dim named `rows`)."""

    def rule(at: Launching) -> Geometry:
        grid = at.dims[rows]
        check_grid(grid)
        return Geometry(grid, at.block)

    return rule


def tiles(tile: int, x: str = "cols", y: str = "rows", block_x: int = 32) -> GridRule:
    """2-D tiles of `tile` x `tile` elements: grid (ceil(x / tile), ceil(y / tile)) over the
    dims named x and y, blocks of (block_x, block / block_x) threads."""

    def rule(at: Launching) -> Geometry:
        if at.block % block_x:
            raise at.error(f"the tile rule takes a block that is a multiple of {block_x}")
        grid = (math.ceil(at.dims[x] / tile), math.ceil(at.dims[y] / tile))
        check_grid(grid)
        return Geometry(grid, (block_x, at.block // block_x))

    return rule


def persistent() -> GridRule:
    """GRID_K blocks per SM (the variant's parameter; 0, the default: as many as are
    resident at once), each looping over the problem."""

    def rule(at: Launching) -> Geometry:
        return Geometry(persistent_grid(at.device, at.variant, at.blocks_per_sm), at.block)

    return rule


STOCK: Mapping[str, Callable[..., GridRule]] = {
    "elements": elements,
    "packs": packs,
    "warp_rows": warp_rows,
    "block_rows": block_rows,
    "tiles": tiles,
    "persistent": persistent,
}
