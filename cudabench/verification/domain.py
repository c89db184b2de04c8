"""The shapes one variant of an op may be verified at, and the edge shapes to try first.

A `Domain` holds what decides whether a shape is worth a check: the op's dims and the ranks
it takes (`check_shape`), the variant's `requires:` (`op.unmet`: a shape it declares N/A is
not wrong there), and the card's memory (`op.device_bytes`). `edges()` lists the shapes that
break kernels most often, smallest first:

    per dim     1, 2, 3, the warp's 31, 32, 33, powers of two and their neighbours, primes;
                each launch's block size and its neighbours; multiples of the vector width
                (16 bytes of the dtype) and the values just off them; each launch parameter's
                value (ITEMS, UNROLL...) times the block, and its neighbours
    geometry    from the op's own grid rules (the parent computes them without a GPU): the
                largest value of each dim that launches one block, and one past it; the
                largest that a grid dimension takes (65,535 along y)
    int32       sizes just past 2^31 elements (and 2^32), where the card's memory allows
    requires    min and max values, and every candidate rounded up to a declared multiple

A multi-dim shape varies one dim through its values while the others take a few companion
values (1, 3, 33); and `pairs()` crosses two dims, for the bugs that need both at once (a row
count past a block and a ragged vector tail): each dim's edge values up to 65,537 against
every remainder modulo the vector width of another dim (32, 33, ... 32 + width - 1), the
other dims at their least. They are small, so in the order of size they come before the
sizes past 2^31. `draw_shapes` is the Hypothesis strategy of the randomized phase over the
same domain, and `smaller` the shrinking steps of a failing shape.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cudabench.core.dtypes import get_dtype
from cudabench.core.records import DeviceInfo, KernelVariant, Shape
from cudabench.core.shapes import MAX_DIM
from cudabench.ops.protocol import OpProtocol, dims

WARP = 32
SMALL = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)
LARGER = (511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 65535, 65536, 65537)
PRIMES = (1009, 4099, 30011, 1000003)
COMPANIONS = (1, 3, 33)  # the other dims' values while one dim walks its edges
INT32 = 2**31
LARGE = 2**24  # a dim this large walks with the other dims at their least only
PAIR_TOP = 65537  # the pairs' walking dim takes its edge values up to this
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535
PACK_BYTES = 16  # a vector load: 4 floats, 8 halves
SMALL_POWERS = 17  # shrinking keeps a dim's remainder modulo 2^1 .. 2^16 (larger: its halves)


def size(shape: Shape) -> int:
    """A shape's size, by which shapes are ordered and compared: the product of its dims."""
    return math.prod(shape)


def order(shape: Shape) -> tuple[int, int, Shape]:
    """Smallest first: by size, then rank, then the dims."""
    return (size(shape), len(shape), shape)


@dataclass(frozen=True)
class Limits:
    """What a variant's `requires:` says of one dim (the op's names: min_<dim>, max_<dim>,
    <dim>_multiple_of), and the largest value the card's memory takes alone."""

    low: int = 1
    high: int = MAX_DIM
    multiple: int = 1

    def project(self, value: int) -> int | None:
        """The value rounded up to the declared multiple, or None outside [low, high]."""
        value = max(value, self.low)
        value = -(-value // self.multiple) * self.multiple
        return value if value <= self.high else None


class Domain:
    """The shapes a variant (in a dtype) may be checked at on a card with `memory_bytes`."""

    def __init__(
        self, op: OpProtocol, variant: KernelVariant, dtype: str, memory_bytes: int, device: DeviceInfo
    ) -> None:
        self.op, self.variant, self.dtype = op, variant, dtype
        self.memory_bytes, self.device = memory_bytes, device
        self.itemsize = get_dtype(dtype).itemsize
        self.dims: tuple[str, ...] = tuple(getattr(op, "dims", ()) or ())
        self.ranks = self._ranks()
        self.limits = {d: self._limits(d) for d in self.names(max(self.ranks))}
        self._allowed: dict[Shape, bool] = {}

    @functools.cached_property
    def unavailable(self) -> str:
        """Why no shape can be checked on this machine ('' if some can): the GPU is older than
        the variant's `min_sm`, or a module its `needs=` names is not installed."""
        missing = [m for m in self.variant.needs if importlib.util.find_spec(m) is None]
        if missing:
            return f"needs {missing[0]}, which is not installed here"
        return self.variant.unmet_on(self.device) or ""

    # ------------------------------------------------------------------ what a shape may be

    def _ranks(self) -> tuple[int, ...]:
        """The ranks the op takes, up to its dims' count (a folded rank adds nothing)."""
        most = len(self.dims) or 4
        found = []
        for rank in range(1, most + 1):
            try:
                self.op.check_shape((1,) * rank)
            except ValueError:
                continue
            found.append(rank)
        return tuple(found) or (most,)

    def names(self, rank: int) -> tuple[str, ...]:
        """The dims a shape of `rank` gives (the last ones: a 1-D shape of rows x cols is
        one row)."""
        if len(self.dims) >= rank:
            return self.dims[len(self.dims) - rank :]
        return tuple(f"d{i}" for i in range(rank))

    def _limits(self, dim: str) -> Limits:
        declared = dict(self.variant.requirements)
        low = declared.get(f"min_{dim}", 1)
        high = declared.get(f"max_{dim}", MAX_DIM)
        multiple = declared.get(f"{dim}_multiple_of", 1) or 1
        alone = self._memory_cap(dim)
        return Limits(max(1, low), min(high, alone), multiple)

    def _memory_cap(self, dim: str) -> int:
        """The largest value of `dim` whose shape (the other dims 1) fits the memory."""
        rank = max(self.ranks)
        names = self.names(rank)
        at = names.index(dim) if dim in names else rank - 1

        def fits(value: int) -> bool:
            shape = tuple(value if i == at else 1 for i in range(rank))
            return self._bytes(shape) <= self.memory_bytes

        if not fits(1):
            return 0
        low, high = 1, MAX_DIM
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if fits(mid) else (low, mid - 1)
        return low

    def _bytes(self, shape: Shape) -> int:
        try:
            return int(self.op.device_bytes(shape))
        except Exception:  # an op that cannot size this shape cannot run it either
            return self.memory_bytes + 1

    def why_not(self, shape: Shape) -> str | None:
        """Why a shape is not checked (the op refuses it, the variant declares it N/A, it
        does not fit the memory), or None."""
        if not shape or any(d < 1 or d > MAX_DIM for d in shape):
            return "not a shape"
        try:
            self.op.check_shape(shape)
        except ValueError as exc:
            return str(exc)
        if len(shape) not in self.ranks:
            return f"rank {len(shape)}"
        reason = self.op.unmet(self.variant, shape) or self._refused(shape)
        if reason:
            return reason
        needed = self._bytes(shape)
        if needed > self.memory_bytes:
            return f"needs {needed / 1e9:.2f} GB, the card has {self.memory_bytes / 1e9:.2f} GB"
        return None

    def _refused(self, shape: Shape) -> str | None:
        """Why the op's own grid rule refuses the shape for one of the variant's launches (a
        grid past the CUDA limits, a rule for 1-D shapes only), or None: the rule declares
        that limit, as `requires:` does. A grid past the limits that no rule refuses is
        launched, and its error is the variant's."""
        occupancy = max(1, min((self.device.max_threads_per_sm // max(1, b) for b in self.blocks), default=1))
        for launch in self.variant.launches:
            try:
                self.op.geometry(launch, self.variant, shape, self.device, occupancy, self.itemsize)
            except ValueError as exc:
                return f"the grid rule {launch.grid!r} refuses it: {exc}"
        return None

    def allows(self, shape: Shape) -> bool:
        if shape not in self._allowed:
            self._allowed[shape] = self.why_not(shape) is None
        return self._allowed[shape]

    # ------------------------------------------------------------------ the edge shapes

    @functools.cached_property
    def blocks(self) -> tuple[int, ...]:
        """The variant's block sizes (threads), one per launch; none for a Python variant."""
        return tuple(dict.fromkeys(launch.block for launch in self.variant.launches))

    @property
    def vector(self) -> int:
        """Elements in a 16-byte vector load of the dtype."""
        return max(1, PACK_BYTES // self.itemsize)

    def values(self, dim: str) -> list[int]:
        """The edge values of one dim, within its limits, smallest first."""
        found: set[int] = {*SMALL, *LARGER, *PRIMES}
        w = self.vector
        for block in self.blocks:
            for base in (block, 2 * block, block * w, 2 * block * w):
                found |= {base - 1, base, base + 1}
            found |= {3 * block, block + w - 1, block * w + w // 2}
        for _, value in self.variant.values:  # ITEMS, UNROLL, tiles: their value and multiples
            for block in self.blocks or (1,):
                for base in (value, value * block, value * block * w):
                    found |= {base - 1, base, base + 1}
        for k in (1, 3, 5):  # the vector width's non-multiples
            found |= {k * w + r for r in range(1, w)}
        found |= self._geometry_values(dim)
        found |= {INT32 - 1, INT32, INT32 + 1, INT32 + 33, 2 * INT32 + 1}
        limits = self.limits.get(dim, Limits())
        found |= {limits.low, limits.low + 1, limits.high, limits.high - limits.multiple}
        if limits.multiple > 1:
            m = limits.multiple
            found |= {m * k for k in (1, 2, 3, 31, 32, 33)}
        projected = (limits.project(v) for v in found if v >= 1)
        return sorted({v for v in projected if v is not None})

    def _geometry_values(self, dim: str) -> set[int]:
        """From the op's grid rules, with the dim walking and the others at 1: the largest
        value that launches a grid of one block and the one past it, and the largest that
        every grid dimension takes (the CUDA limits: 2^31 - 1 blocks along x, 65,535 along
        y and z)."""
        if not self.variant.launches or not self.dims:
            return set()
        rank = len(self.dims)
        at = self.dims.index(dim) if dim in self.dims else rank - 1
        found: set[int] = set()
        high = max(1, min(self.limits.get(dim, Limits()).high, MAX_DIM))

        def shape(value: int) -> Shape:
            return tuple(value if i == at else 1 for i in range(rank))

        one = self._last(lambda v: self._grid(shape(v), one_block=True), high)
        if one:
            found |= {one, one + 1}
        fits = self._last(lambda v: self._grid(shape(v), one_block=False), high)
        if fits and fits < high:
            found.add(fits)
        return found

    def _grid(self, shape: Shape, one_block: bool) -> bool:
        """Whether every launch's grid is one block (`one_block`), or within the limits."""
        occupancy = max(1, min(self.device.max_threads_per_sm // max(1, b) for b in self.blocks))
        for launch in self.variant.launches:
            try:
                geometry = self.op.geometry(
                    launch, self.variant, shape, self.device, occupancy, self.itemsize
                )
            except Exception:  # the rule refuses the shape: not launched
                return False
            grid = dims(geometry.grid)
            if one_block and geometry.blocks != 1:
                return False
            if grid[0] > MAX_GRID_X or any(g > MAX_GRID_YZ for g in grid[1:]):
                return False
        return True

    @staticmethod
    def _last(holds: Any, high: int) -> int:
        """The largest v in [1, high] with holds(v), assuming it holds up to some v and not
        after (0 when it does not hold at 1)."""
        if not holds(1):
            return 0
        low = 1
        step = 1
        while low + step <= high and holds(low + step):  # gallop, then bisect
            low += step
            step *= 2
        top = min(high, low + step)
        while low < top:
            mid = (low + top + 1) // 2
            low, top = (mid, top) if holds(mid) else (low, mid - 1)
        return low

    def edges(self) -> list[Shape]:
        """The edge shapes the domain allows, smallest first (computed once: up to 0.15 s)."""
        return list(self._edges)

    @functools.cached_property
    def _edges(self) -> list[Shape]:
        found: set[Shape] = set()
        for rank in self.ranks:
            names = self.names(rank)
            values = {d: self.values(d) for d in names}
            companions = {d: self._companions(d) for d in names}
            for i, walking in enumerate(names):
                others = [companions[d] for j, d in enumerate(names) if j != i]
                if not all(others):  # another dim has no value the memory takes
                    continue
                alone = [[min(c)] for c in others]  # a large value: the others at their least
                for value in values[walking]:
                    for rest in _product(alone if value >= LARGE else others):
                        shape = (*rest[:i], value, *rest[i:])
                        if self.allows(shape):
                            found.add(shape)
        return sorted(found | set(self.pairs()), key=order)

    def pairs(self) -> list[Shape]:
        """The edge shapes of two dims at once that the domain allows, smallest first: for
        each ordered pair of dims, the first's edge values up to PAIR_TOP against each
        remainder of the second modulo the vector width (WARP + r), the others at their
        least."""
        found: set[Shape] = set()
        for rank in (r for r in self.ranks if r >= 2):
            names = self.names(rank)
            least = [min(self._companions(d), default=0) for d in names]
            if not all(least):  # a dim with no value the memory takes
                continue
            walks = [[v for v in self.values(d) if v <= PAIR_TOP] for d in names]
            remainders = [self._remainders(d) for d in names]
            for i, j in itertools.permutations(range(rank), 2):
                for value, other in itertools.product(walks[i], remainders[j]):
                    shape = list(least)
                    shape[i], shape[j] = value, other
                    if self.allows(tuple(shape)):
                        found.add(tuple(shape))
        return sorted(found, key=order)

    def _remainders(self, dim: str) -> list[int]:
        """WARP + r for each remainder r modulo the vector width, within the dim's limits."""
        limits = self.limits.get(dim, Limits())
        return sorted({v for v in (limits.project(WARP + r) for r in range(self.vector)) if v is not None})

    def _companions(self, dim: str) -> list[int]:
        limits = self.limits.get(dim, Limits())
        return sorted({v for v in (limits.project(c) for c in COMPANIONS) if v is not None})

    # ------------------------------------------------------------------ shrinking

    def smaller(self, shape: Shape) -> list[Shape]:
        """Shapes smaller than `shape` one step away, which the domain allows, smallest
        first: one dim at a time lowered to 1, 2, 3, its halves, itself less a power of two,
        or its remainder modulo the warp, the vector width, a block or a power of two plus a
        few of those (a tail bug keeps failing where the tail is kept); and all dims halved."""
        found: set[Shape] = set()
        for i, value in enumerate(shape):
            dim = self.names(len(shape))[i]
            limits = self.limits.get(dim, Limits())
            for lower in self._lower(value):
                projected = limits.project(lower)
                if projected is not None and projected < value:
                    found.add((*shape[:i], projected, *shape[i + 1 :]))
        halved = tuple(max(1, d // 2) for d in shape)
        if halved != shape:
            found.add(halved)
        return sorted((s for s in found if self.allows(s)), key=order)

    def _lower(self, value: int) -> set[int]:
        found = {1, 2, 3}
        half = value
        while half > 1:
            half //= 2
            found |= {half, half + 1}
        step = 1
        while step < value:
            found.add(value - step)
            step *= 2
        moduli = {WARP, self.vector, *self.blocks, *(b * self.vector for b in self.blocks)}
        moduli |= {2**k for k in range(1, min(SMALL_POWERS, value.bit_length()))}
        for m in moduli:
            r = value % m
            found |= {value - m, m + r, 2 * m + r} | ({r} if r else set())
        return {v for v in found if 1 <= v < value}


def _product(lists: list[list[int]]) -> Iterable[tuple[int, ...]]:
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield (head, *rest)
