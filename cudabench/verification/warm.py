"""The shapes whose checks compile the kernels a search's checks need: made first, outside
the budget, so that a verify on a machine whose CuPy cache is empty checks the shapes one
whose cache is full does, all but the largest (below).

A shape's check (its float64 reference, tolerance and comparison) runs CuPy reductions, and
CuPy's CUB block reduction is a kernel compiled by NVRTC (with CUB's headers) for each block
size, which follows the reduced length n: the next power of two of ceil(n / 4), from 32 to
512 (cupy/_core/_cub_reduction.pyx, `_get_cub_block_specs`). On an H200 whose cache was empty,
reduce's checks at 1, 128, 129, 257, 513 and 1025 columns, and at one row of 1025, took 1.6 to
4.2 s each, 33 NVRTC compiles; once compiled, a check takes about 1.5 ms.

CuPy reduces trailing axes of a C-ordered array, so the reduced length is a product of the
shape's last dims: a shape's `kind` is the block size of each such product, which dims are 1
(a single row is reduced as 1-D: ops/reductions.py `rows_of`) and the power of two of its
size. `warm_shapes` keeps the smallest edge shape of each kind, up to WARM_ELEMENTS elements,
leaving out the kinds an earlier variant of the op warmed. `first_checks` makes a variant's
first checks, before its budget: the smallest edge shapes, each carrying a part of the warm-up.
Shapes past 2^31 elements need CuPy kernels of 64-bit indices, compiled when the search gets
there (1.6 to 3.7 s each on a fresh H200).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet

from cudabench.core.records import Shape, Status
from cudabench.execution.rounds import WARM_UP_TIMEOUT_NOTE
from cudabench.verification.domain import order
from cudabench.verification.search import Probe

WARM_ELEMENTS = 1 << 22  # larger edge shapes are not made to compile anything
# warm-up shapes a first check carries: a job's --timeout (60 s) holds them on a fresh machine
# (an H200 took 0.5 s a shape on average, 4.2 s for the slowest)
WARM_CHUNK = 8
ITEMS_PER_THREAD = 4  # CuPy's CUB block reduction: items a thread, block sizes 32 to 512
BLOCKS = (32, 512)


def block_size(n: int) -> int:
    """The block size CuPy's CUB block reduction takes for a reduced length n."""
    wanted = 1 << max(0, math.ceil(n / ITEMS_PER_THREAD) - 1).bit_length()
    return min(max(wanted, BLOCKS[0]), BLOCKS[1])


def kind(shape: Shape) -> tuple[object, ...]:
    """What decides which kernels a shape's check compiles: the rank, the block size of
    each trailing product of dims, which dims are 1, and the power of two of the size (the
    inputs' random generation and other kernels of CuPy change at sizes the block rule does
    not tell: a fresh H200 compiled new ones at 128 elements, as 128, 128x1 and 3x128)."""
    trailing = [math.prod(shape[i:]) for i in range(len(shape))]
    blocks = tuple(block_size(n) for n in trailing)
    return (len(shape), blocks, tuple(d == 1 for d in shape), math.prod(shape).bit_length())


def warm_shapes(edges: list[Shape], done: AbstractSet[tuple[object, ...]] = frozenset()) -> list[Shape]:
    """The smallest of `edges` of each kind not `done`, up to WARM_ELEMENTS elements,
    smallest first (an op's later variants warm only the kinds the earlier ones lacked)."""
    chosen: dict[tuple[object, ...], Shape] = {}
    for shape in sorted(edges, key=order):
        if math.prod(shape) <= WARM_ELEMENTS and kind(shape) not in done:
            chosen.setdefault(kind(shape), shape)
    return sorted(chosen.values(), key=order)


def first_checks(
    oracle: Callable[[list[Shape], Sequence[tuple[Shape, ...]]], list[Probe]],
    edges: list[Shape],
    warm_up: list[Shape],
) -> tuple[list[Probe], list[Shape]]:
    """A variant's first checks, made before its budget starts, one at a time: the smallest
    edge shapes in turn, each carrying the next part of WARM_CHUNK warm-up shapes (each job
    has its own --timeout, and the pool gives one that carries a part WARM_UP_S more), until
    the parts are out or a check is wrong or does not compile: a wrong variant costs one
    check (a hanging one, one --timeout). A check killed in its warm-up, before the variant
    ran (WARM_UP_TIMEOUT_NOTE), is not the variant's: that shape is checked again without it
    and the warm-up ends there (the search compiles the rest when it reaches them). Returns
    the probes and the warm-up shapes sent (not those of a check whose worker was killed: a
    later variant warms them again). The warm-up shapes are some of `edges`, so there are at
    least as many edges as parts."""
    parts = [tuple(warm_up[i : i + WARM_CHUNK]) for i in range(0, len(warm_up), WARM_CHUNK)]
    probes: list[Probe] = []
    sent: list[Shape] = []
    for i, shape in enumerate(edges[: max(1, len(parts))]):
        part = parts[i] if i < len(parts) else ()
        (probe,) = oracle([shape], [part])
        if part and probe.row is not None and WARM_UP_TIMEOUT_NOTE in probe.row.notes:
            probes += oracle([shape], [()])
            break
        probes.append(probe)
        if probe.status not in (Status.TIMEOUT, Status.CRASH):
            sent += part
        if probe.wrong or probe.status is Status.COMPILE_ERROR:
            break
    return probes, sent
