"""The op API: an operation is one small Python file, `<folder>/<op>/op.py`, beside its .cu
variants (and, optionally, Python variants in other .py files of the folder).

    from cudabench.ops.api import Op, Scalar, Tensor, block_rows

    class RmsNorm(Op):
        about = "out = x * w / sqrt(mean(x^2) + eps), along each row"
        dims = ("rows", "cols")                   # -s 4096x8192
        inputs = (Tensor("x", "rows cols"), Tensor("w", "cols"))
        outputs = (Tensor("out", "rows cols"),)
        scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", 1e-6))
        rules = {"row": block_rows()}
        accumulate = "cols"

        def reference(self, xp, x, w):
            return x * w / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)

Everything else has a default derived from these declarations: the kernel argument list
(inputs, outputs, workspace, scalars, then the grid rule's scalars), the inputs (seeded
normal random numbers), the tolerance, the bytes moved and read, the shapes a case may take,
the `requires:` names a header may use. docs/guide/ops.md describes every declaration. An `Op`
satisfies the runner's protocol (ops/base.py), so the runner, the fake backend and the
commands treat a user's op and a catalogue op the same way.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from cudabench.core.records import DeviceInfo, KernelVariant, Launch, Shape
from cudabench.ops import arguments, errorbound, torch_baselines
from cudabench.ops.checks import check_definition
from cudabench.ops.declarations import (
    CTYPES,
    UNIT_ROUNDOFF,
    OpDefinitionError,
    Scalar,
    Tensor,
    TorchCall,
    VariantInfo,
    normal,
    torch_call,
    uniform,
    variant,
    xp_of,
)
from cudabench.ops.protocol import ZERO_TOLERANCE, Geometry
from cudabench.ops.rules import (
    Dims,
    GridRule,
    Launching,
    block_rows,
    check_grid,
    elements,
    packs,
    persistent,
    tiles,
    warp_rows,
)

__all__ = [
    "CTYPES",
    "UNIT_ROUNDOFF",
    "DeviceInfo",
    "Dims",
    "Geometry",
    "GridRule",
    "KernelVariant",
    "Launch",
    "Launching",
    "Op",
    "OpDefinitionError",
    "Scalar",
    "Shape",
    "Tensor",
    "TorchCall",
    "VariantInfo",
    "block_rows",
    "check_grid",
    "elements",
    "normal",
    "packs",
    "persistent",
    "tiles",
    "torch_call",
    "uniform",
    "variant",
    "warp_rows",
    "xp_of",
]


OWN_TOLERANCE = "the op's own tolerance()"  # tolerance_rule() of an op that writes one


class Op:
    """Base class of every op: declare the class attributes, override the methods you need.
    See the module docstring and docs/guide/ops.md."""

    name: str = ""  # the folder's name when left empty
    about: str = ""
    dims: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()  # shape lengths taken; () = 1 to len(dims)
    example: str = ""  # a shape for error messages, e.g. "4096x8192"
    inputs: tuple[Tensor, ...] = ()
    outputs: tuple[Tensor, ...] = ()
    scalars: tuple[Scalar, ...] = ()
    workspace: tuple[str, ...] = ()  # scratch arrays a grid rule sizes (Geometry.workspace)
    rule_scalars: tuple[Scalar, ...] = ()  # the grid rule's Geometry.scalars, in order
    args: tuple[str, ...] | None = None  # the kernel's argument list by name, if not the default
    rules: Mapping[str, GridRule] = MappingProxyType({})
    library: Mapping[str, Callable[..., Any] | TorchCall] = MappingProxyType({})
    accumulate: str | int | None = None  # terms a float32 sum adds up per output (a dim name)
    ulps: float = 16.0  # the tolerance's fixed part, in float32 units of |reference|
    float64_inputs: bool = True  # reference() gets float64 copies of the inputs
    _untraceable: str | None = None  # why the tracer refused reference(), once it has
    compute_bound: bool = False  # the table shows GFLOP/s and % of the fp32 peak

    # --- the runner's protocol (ops/base.py) ------------------------------------------

    @property
    def grid_rules(self) -> tuple[str, ...]:
        return tuple(self.rules)

    @property
    def requirements(self) -> tuple[str, ...]:
        """The `requires:` names a header may use: max_<dim>, min_<dim>, <dim>_multiple_of."""
        return tuple(k for d in self.dims for k in (f"max_{d}", f"min_{d}", f"{d}_multiple_of"))

    @property
    def in_place(self) -> bool:
        return self.in_place_input is not None

    @property
    def in_place_input(self) -> int | None:
        """The index of the input the output overwrites, or None."""
        names = [t.name for t in self.inputs]
        for out in self.outputs:
            if out.name in names:
                return names.index(out.name)
        return None

    def check_shape(self, shape: Shape) -> None:
        ranks = self.ranks or tuple(range(1, len(self.dims) + 1))
        if len(shape) not in ranks:
            n = len(self.dims)
            taken = " or ".join(
                f"{r}-D ({' x '.join(self.dims[n - r :])})" if r <= n else f"{r}-D (folded)" for r in ranks
            )
            example = f" (e.g. {self.example})" if self.example else ""
            raise ValueError(f"{self.name} takes a {taken} shape{example}, got {len(shape)}-D")

    def unmet(self, variant: KernelVariant, shape: Shape) -> str | None:
        dims = self.dim_values(shape)
        for name, value in variant.requirements:  # a parameter's name: its value here
            for dim, size in dims.items():
                if name == f"max_{dim}" and size > value:
                    return f"needs {dim} <= {value} ({dim} = {size})"
                if name == f"min_{dim}" and size < value:
                    return f"needs {dim} >= {value} ({dim} = {size})"
                if name == f"{dim}_multiple_of" and size % value:
                    return f"needs {dim} % {value} == 0 ({dim} = {size})"
        return None

    def output_shape(self, shape: Shape) -> Shape:
        return self.tensor_shape(self.outputs[0], shape)

    def bytes_moved(self, shape: Shape, itemsize: int = 4) -> int:
        written = sum(math.prod(self.tensor_shape(t, shape)) for t in self.outputs)
        return self.bytes_read(shape, itemsize) + itemsize * written

    def bytes_read(self, shape: Shape, itemsize: int = 4) -> int:
        return itemsize * sum(math.prod(self.tensor_shape(t, shape)) for t in self.inputs)

    def arithmetic(self, shape: Shape) -> int:
        return self.flop_count(self.dim_values(shape))

    def flops(self, shape: Shape) -> int | None:
        """The FLOPs a compute-bound op reports as GFLOP/s (None: a memory-bound op)."""
        return self.flop_count(self.dim_values(shape)) if self.compute_bound else None

    def device_bytes(self, shape: Shape) -> int:
        """Inputs and output, float64 copies of the inputs for the reference, the reference,
        its tolerance and the check's temporaries, and 64 MiB of slack."""
        ins = sum(math.prod(self.tensor_shape(t, shape)) for t in self.inputs)
        outs = sum(math.prod(self.tensor_shape(t, shape)) for t in self.outputs)
        return 12 * ins + 28 * outs + (64 << 20)

    def make_inputs(self, xp: Any, shape: Shape, seed: int) -> tuple[Any, ...]:
        """float32 arrays, one per input (the runner rounds them to the case's dtype)."""
        rng = xp.random.default_rng(seed)
        return tuple((t.fill or normal())(xp, rng, self.tensor_shape(t, shape)) for t in self.inputs)

    def expected(self, xp: Any, inputs: tuple[Any, ...]) -> tuple[Any, Any]:
        """(float64 reference, per-element tolerance), both flat: `reference` and
        `tolerance` (the runner adds the rounding of each output to the dtype)."""
        given = tuple(x.astype(xp.float64) for x in inputs) if self.float64_inputs else inputs
        ref = xp.asarray(self.reference(xp, *given), dtype=xp.float64).reshape(-1)
        tol = xp.broadcast_to(xp.asarray(self.tolerance(xp, ref, *given), dtype=xp.float64), ref.shape)
        return ref, xp.maximum(tol, ZERO_TOLERANCE)

    def geometry(
        self,
        launch: Launch,
        variant: KernelVariant,
        shape: Shape,
        device: DeviceInfo,
        blocks_per_sm: int,
        itemsize: int = 4,
    ) -> Geometry:
        rule = self.rules.get(launch.grid)
        if rule is None:
            raise ValueError(
                f"{variant.path}:{variant.header_line}: unknown grid rule "
                f"{launch.grid!r} ({self.name} knows: {', '.join(self.rules)})"
            )
        at = Launching(
            self.name, self.dim_values(shape), shape, launch, variant, device, blocks_per_sm, itemsize
        )
        geometry = rule(at)
        if not isinstance(geometry, Geometry):
            raise TypeError(
                f"grid rule {launch.grid!r} of {self.name} returned {type(geometry).__name__}, not a Geometry"
            )
        return geometry

    def kernel_args(
        self, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any], geometry: Geometry
    ) -> tuple[Any, ...]:
        return arguments.kernel_args(self, inputs, out, workspace, geometry)

    def baselines(self) -> dict[str, Callable[[tuple[Any, ...]], Any]]:
        found: dict[str, Callable[[tuple[Any, ...]], Any]] = {}
        for name, fn in self.library.items():
            if isinstance(fn, TorchCall):
                if torch_baselines.available():
                    found[name] = torch_baselines.call(fn.fn)
            else:
                found[name] = _unpacking(fn)
        return found

    def libraries(self, names: Iterable[str]) -> tuple[str, ...]:
        """The Python libraries the named baselines import on their first call ("torch" for
        a torch_call): a worker imports them as it starts (plan.job_libraries)."""
        torch = any(isinstance(self.library.get(name), TorchCall) for name in names)
        return ("torch",) if torch and torch_baselines.available() else ()

    # --- what an op declares by overriding ----------------------------------------------

    def reference(self, xp: Any, *inputs: Any) -> Any:
        """The exact result in float64, shaped like the output (or flat), written with `xp`
        (numpy or cupy) so it runs on either. Every op must define it (or `expected`)."""
        raise NotImplementedError

    def tolerance(self, xp: Any, ref: Any, *inputs: Any) -> Any:
        """Per-element tolerance. By default it follows the problem's own sensitivity:
        SAFETY (3) times a bound on the error of a float32 evaluation of `reference`'s formula
        on these inputs (ops/errorbound.py: the reference run once more on traced arrays; a
        sum of n terms allows for sqrt(n)-like rounding of its partial sums, never cancels),
        plus `ulps` float32 units of |reference|. Where the reference uses what the tracer has
        no rule for, the |reference|-relative rule (ulps + 2 sqrt(n)) u |reference|, n the
        `accumulate` length, and `tolerance_rule()` says why. Override it to give your own.
        `inputs` are what `reference` gets (float64 copies unless float64_inputs = False)."""
        relative = self.ulps * UNIT_ROUNDOFF * xp.abs(ref)
        if self._untraceable is None:
            try:
                bound = errorbound.bound(self.reference, xp, inputs, float64_inputs=False)
                return errorbound.SAFETY * bound.reshape(ref.shape) + relative
            except errorbound.UnsupportedReference as exc:
                self._untraceable = str(exc)  # a property of the code: not traced again
        n = self._accumulation(inputs)
        return relative + 2.0 * math.sqrt(n) * UNIT_ROUNDOFF * xp.abs(ref)

    def tolerance_rule(self) -> str:
        """Which rule gave this op's tolerance, in one line: its own `tolerance()`, the
        traced float32 error bound, or the |reference|-relative fallback and why."""
        if type(self).tolerance is not Op.tolerance:
            return OWN_TOLERANCE
        if self._untraceable is not None:
            return f"|reference|-relative (the reference could not be traced: {self._untraceable})"
        return f"{errorbound.SAFETY:g} x the float32 error bound of the reference (traced)"

    def float32_evaluation(self, xp: Any, inputs: tuple[Any, ...]) -> Any | None:
        """The reference evaluated in float32 on the same inputs (flat), the yardstick of a
        row's accuracy figure: None for an op without a plain `reference`, or whose
        reference does not stay in float32 (it asks for float64 itself, or fails)."""
        if type(self).reference is Op.reference:
            return None
        try:
            given = tuple(x.astype(xp.float32) if _floating(x.dtype) else x for x in inputs)
            with _quiet(xp):
                out = xp.asarray(self.reference(xp, *given))
        except Exception:  # the yardstick is a figure, not a verdict: without it, none
            return None
        return out.reshape(-1) if out.dtype == xp.float32 else None

    def flop_count(self, dims: Dims) -> int:
        """Floating-point operations of one case (the roofline's count); 0 unless declared."""
        return 0

    # --- derived ------------------------------------------------------------------------

    def arg_names(self) -> tuple[str, ...]:
        """The kernel's argument list by name: `args`, or inputs, outputs (an in-place one
        is its input), workspace, scalars, then the grid rule's scalars (ops/arguments.py)."""
        return arguments.arg_names(self)

    def arg_roles(self) -> tuple[tuple[str, str], ...]:
        """(role, name) per kernel argument: input, output, inplace, workspace, scalar, rule."""
        return arguments.arg_roles(self)

    def dim_values(self, shape: Shape) -> Dims:
        """The case's shape on the dims: as many as dims, one to one; fewer, the leading
        dims are 1 (a 1-D shape of a rows x cols op is one row); more, the leading sizes
        multiply into the first dim (8x512x4096 is 4096 rows of 4096)."""
        n, k = len(self.dims), len(shape)
        if k <= n:
            values = (1,) * (n - k) + tuple(shape)
        else:
            values = (math.prod(shape[: k - n + 1]), *shape[k - n + 1 :])
        return Dims(dict(zip(self.dims, values)))

    def tensor_shape(self, tensor: Tensor, shape: Shape) -> tuple[int, ...]:
        """A tensor's array shape for a case: its dims' sizes, leaving out leading dims the
        case's shape did not give (a 1-D softmax input stays 1-D), keeping one at least."""
        dims = self.dim_values(shape)
        padded = set(self.dims[: max(0, len(self.dims) - len(shape))])
        axes = list(tensor.axes)
        while len(axes) > 1 and isinstance(axes[0], str) and axes[0] in padded:
            axes.pop(0)
        return tuple(a if isinstance(a, int) else dims[a] for a in axes)

    def dims_of(self, inputs: tuple[Any, ...], out: Any) -> Dims:
        """The dims read back from the arrays (right-aligned; a dim no array has is 1)."""
        values: dict[str, int] = {}
        for tensor, array in (*zip(self.inputs, inputs), (self.outputs[0], out)):
            for axis, size in zip(reversed(tensor.axes), reversed(array.shape)):
                if isinstance(axis, str):
                    values.setdefault(axis, int(size))
        return Dims({d: values.get(d, 1) for d in self.dims})

    def _accumulation(self, inputs: tuple[Any, ...]) -> int:
        if self.accumulate is None:
            return 1
        if isinstance(self.accumulate, int):
            return self.accumulate
        values: dict[str, int] = {}
        for tensor, array in zip(self.inputs, inputs):
            for axis, size in zip(reversed(tensor.axes), reversed(array.shape)):
                if isinstance(axis, str):
                    values.setdefault(axis, int(size))
        return values.get(self.accumulate, 1)

    def validate(self) -> None:
        """OpDefinitionError (one line) for declarations that cannot serve."""
        check_definition(self, Op)


def _floating(dtype: Any) -> bool:
    """A floating-point element type: NumPy's kinds, and bfloat16 (ml_dtypes' kind is 'V')."""
    return bool(dtype.kind == "f" or dtype.name == "bfloat16")


def _unpacking(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...]], Any]:
    def call(inputs: tuple[Any, ...]) -> Any:
        return fn(*inputs)

    return call


def _quiet(xp: Any) -> Any:
    """NumPy's overflow and invalid warnings silenced (a float32 evaluation may overflow)."""
    import numpy as np

    return np.errstate(all="ignore") if xp is np else contextlib.nullcontext()
