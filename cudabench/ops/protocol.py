"""What an op provides to the runner: the protocol every op satisfies (cudabench.op.Op, the
base class of every op file, implements it from declarations), and the checks they share.

An op fixes the kernel argument list for all its variants, makes inputs on the device, computes
a float64 reference with a tolerance, counts the bytes that must move, defines its grid rules
by name, and names its library baselines. Array code is written against `xp` (CuPy on the
GPU, NumPy in the fake backend), so one op serves both.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from cudabench.core.records import DeviceInfo, KernelVariant, Launch, Shape

MAX_GRID_X = 2**31 - 1  # blocks along x, the CUDA limit


Dim = int | tuple[int, ...]  # a launch dimension: 256, or (32, 8) / (grid_x, grid_y)


def dims(value: Dim) -> tuple[int, ...]:
    """A launch dimension as a tuple: 256 -> (256,), (32, 8) stays."""
    return tuple(value) if isinstance(value, tuple) else (value,)


@dataclass(frozen=True)
class Geometry:
    """How one launch covers the problem: grid and block (ints, or tuples for 2-D launches:
    the grid rule turns the header's thread count into a block shape), plus the scalar
    arguments the grid rule decided (passed after the op's fixed arguments)."""

    grid: Dim
    block: Dim
    scalars: tuple[int, ...] = ()
    # scratch arrays the kernel takes: name -> (element count, dtype), zeroed once
    workspace: dict[str, tuple[int, str]] = field(default_factory=dict)
    shared_bytes: int = 0  # dynamic shared memory per block

    @property
    def blocks(self) -> int:
        """Blocks in the grid."""
        return math.prod(dims(self.grid))


ZERO_TOLERANCE = 1e-30  # the floor an op's tolerance is raised to (no division by 0): none allowed


@dataclass(frozen=True)
class Check:
    """Validation outcome: the worst element's error and tolerance, how many were wrong, and
    the output's accuracy beside the float32 evaluation of the reference (`vs_f32`: its
    worst |error| over that evaluation's worst |error|; 1 is as accurate as plain float32)."""

    ok: bool
    max_abs_err: float
    tolerance: float
    wrong: int
    total: int
    where: int  # flat index of the worst element (the largest |err| / tol)
    vs_f32: float | None = None
    note: str = ""  # what the verdict rests on, when not the op's usual rule (a fallback)

    @property
    def ratio(self) -> float:
        """The worst element's |err| over its tolerance: above 1 is wrong."""
        return self.max_abs_err / self.tolerance if self.tolerance else math.inf

    def describe(self) -> str:
        """What a FAIL says: how many outputs, where the worst is, and by how much."""
        if self.ok:
            return ""
        finite = math.isfinite(self.max_abs_err)
        err = f"{self.max_abs_err:.4g}" if finite else "inf (not finite, or never written)"
        head = f"{self.wrong} of {self.total} outputs wrong; worst at {self.where}: |err| {err}"
        if math.isnan(self.tolerance):
            return f"{head} where the tolerance is not a number (inf or NaN inputs?)"
        if self.tolerance <= ZERO_TOLERANCE:  # a ratio over the floor would be a meaningless 1e29
            return f"{head} where the result is exact (tolerance 0: the reference and its bound are 0)"
        ratio = f" ({self.ratio:.3g}x the tolerance)" if finite else ""  # not "infx"
        return f"{head} > tol {self.tolerance:.3g}{ratio}"


class OpProtocol(Protocol):
    name: str
    about: str

    @property
    def grid_rules(self) -> tuple[str, ...]: ...

    @property
    def requirements(self) -> tuple[str, ...]:
        """Names a header's `requires:` may use."""

    def check_shape(self, shape: Shape) -> None:
        """Raise ValueError with a one-line reason if the op cannot take this shape at all."""

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        """Why the variant's `requires:` rules out this shape, or None."""

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        """Bytes that must move: each input read once, each output written once."""

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        """Of those, the bytes read (the rest are written): the row's traffic mix, by which
        its practical ceiling is interpolated (ceilings.py)."""

    def arithmetic(self, shape: Shape) -> int:
        """Floating-point operations the op performs, bound by them or not: the roofline's
        FLOP count (`flops`, for the ops that report GFLOP/s, is the same number)."""

    def device_bytes(self, shape: Shape) -> int:
        """GPU memory one case needs: inputs, outputs, reference and its temporaries."""

    def output_shape(self, shape: Shape) -> Shape: ...

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]: ...

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        """(float64 reference, per-element tolerance), both flat (the output's elements)."""

    def geometry(
        self,
        launch: Launch,
        variant: KernelVariant,
        shape: Shape,
        device: DeviceInfo,
        blocks_per_sm: int,
        itemsize: int = 4,
    ) -> Geometry:
        """Grid, block and scalar arguments by the launch's named grid rule; blocks_per_sm is
        the launch's occupancy (resident blocks per SM at its block size)."""

    def kernel_args(
        self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any], geometry: Geometry
    ) -> tuple[Any, ...]: ...

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        """Library calls a user would otherwise make: name -> f(inputs) -> output array."""

    # Optional (getattr with a default): `in_place = True` when the kernel overwrites its
    # input (`in_place_input`: which one, 0 by default; the runner hands it a copy as `out`,
    # restored before every call it times), and
    # `flops(shape) -> int` for compute-bound ops (the table then shows GFLOP/s and % of the
    # fp32 peak), and `unused_params(shape) -> tuple[str, ...]`: the tunable parameters its
    # grid rules ignore at a shape (tune holds them at their default there), and
    # `libraries(names) -> tuple[str, ...]`: the Python libraries the named baselines import
    # on their first call (a worker imports them as it starts).


def in_place_input(op: OpProtocol) -> int | None:
    """The input an in-place op's output overwrites (0 unless the op names another), or None
    for an op that writes a new array."""
    if not getattr(op, "in_place", False):
        return None
    return getattr(op, "in_place_input", None) or 0


def tiles_grid(n: int, block: int, variant: KernelVariant, itemsize: int = 4) -> int:
    """The `tiles` rule (kernels/common/stream.cuh): a block per block x UNROLL 16-byte
    vectors of n elements (at least one block: the elements past the last whole vector, or all
    of them when a buffer is unaligned, go one by one over the same grid)."""
    vectors = n // (16 // itemsize)
    grid = max(1, math.ceil(vectors / (block * variant.value("UNROLL", 4))))
    if grid > MAX_GRID_X:
        raise ValueError(f"grid of {grid} blocks exceeds the CUDA limit {MAX_GRID_X}")
    return grid


def persistent_grid(device: DeviceInfo, variant: KernelVariant, blocks_per_sm: int) -> int:
    """The `persistent` rule: GRID_K blocks per SM (0, the default: as many as are resident)."""
    return device.sm_count * max(1, variant.value("GRID_K", 0) or blocks_per_sm)


def array_module(x: Any) -> Any:
    """numpy for a NumPy array (the fake backend), cupy for anything else."""
    if isinstance(x, np.ndarray):
        return np
    import cupy

    return cupy


def check_output(xp: Any, out: Any, ref: Any, tol: Any, yardstick: float | None = None) -> Check:
    """Compare an output with the float64 reference; NaN (the poison) never passes.
    `yardstick`: the worst |error| of the reference's formula evaluated in float32, against
    which the output's own worst |error| is reported (`Check.vs_f32`)."""
    got = out.reshape(-1).astype(xp.float64)
    ref = ref.reshape(-1)
    tol = tol.reshape(-1)
    if got.size != ref.size:  # an op's reference of another shape than its output
        raise ValueError(f"the reference has {ref.size} values, the output {got.size}")
    with np.errstate(invalid="ignore") if xp is np else contextlib.nullcontext():  # NaN expected
        err = xp.where(got == ref, 0.0, xp.abs(got - ref))  # equal infinities are right
        err = xp.where(xp.isnan(err), xp.inf, err)
        ratio = err / tol
    # A tolerance that is not a number (inf inputs: 0 * inf in the bound) judges nothing: there
    # only an output equal to the reference passes (NaN > 1 is False, so NaN would pass all)
    ratio = xp.where(xp.isnan(ratio), xp.where(err == 0, 0.0, xp.inf), ratio)
    where = int(xp.argmax(ratio))
    wrong = int((ratio > 1.0).sum())
    worst = float(err.max()) if err.size else 0.0
    vs_f32 = None
    if yardstick is not None and math.isfinite(worst):
        vs_f32 = worst / yardstick if yardstick > 0 else (0.0 if worst == 0 else None)
    return Check(
        ok=wrong == 0,
        max_abs_err=float(err[where]),
        tolerance=float(tol[where]),
        wrong=wrong,
        total=int(got.size),
        where=where,
        vs_f32=vs_f32,
    )
