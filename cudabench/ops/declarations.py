"""The records an op file declares with (cudabench/op.py exports them): `Tensor`, `Scalar`,
input fills (`normal`, `uniform`), `torch_call` for torch baselines, and the `@variant`
decorator of Python variants with its `VariantInfo`; the C types a scalar may have."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from cudabench.ops.protocol import array_module
from cudabench.ops.rules import Dims

UNIT_ROUNDOFF = 2.0**-24  # float32's: kernels accumulate in float32 whatever the dtype
# The C types a scalar argument may have, as the kernel declares it.
CTYPES: Mapping[str, type] = MappingProxyType(
    {
        "int": np.int32,
        "int32_t": np.int32,
        "unsigned": np.uint32,
        "unsigned int": np.uint32,
        "uint32_t": np.uint32,
        "long long": np.int64,
        "int64_t": np.int64,
        "unsigned long long": np.uint64,
        "uint64_t": np.uint64,
        "size_t": np.uint64,
        "float": np.float32,
        "double": np.float64,
    }
)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Fill = Callable[[Any, Any, tuple[int, ...]], Any]  # (xp, rng, shape) -> float32 array
ScalarValue = int | float | str | Callable[[Dims], int | float] | None


class OpDefinitionError(ValueError):
    """An op file's declarations cannot serve; one line (the registry prefixes the file)."""


def xp_of(array: Any) -> Any:
    """The array module of an array: numpy for NumPy arrays (the fake backend), else cupy."""
    return array_module(array)


def normal(mean: float = 0.0, std: float = 1.0) -> Fill:
    """Inputs drawn from a normal distribution (the default is the standard normal)."""

    def fill(xp: Any, rng: Any, shape: tuple[int, ...]) -> Any:
        x = rng.standard_normal(shape, dtype=xp.float32)
        if std != 1.0:
            x *= std
        if mean != 0.0:
            x += mean
        return x

    return fill


def uniform(low: float, high: float) -> Fill:
    """Inputs drawn uniformly from [low, high) (e.g. positive scales: uniform(0.5, 2))."""

    def fill(xp: Any, rng: Any, shape: tuple[int, ...]) -> Any:
        x = rng.random(shape, dtype=xp.float32)
        x *= high - low
        x += low
        return x

    return fill


@dataclass(frozen=True)
class Tensor:
    """An input or output array, its shape named by the op's dims (`"rows cols"`, or a
    tuple whose items are dim names or fixed sizes). `fill` makes an input's values (normal
    random numbers by default). An output with an input's name is that input, overwritten in
    place (the kernel gets one pointer; the runner restores it before every timed call)."""

    name: str
    dims: tuple[str | int, ...] | str
    fill: Fill | None = None

    def __post_init__(self) -> None:
        if isinstance(self.dims, str):
            object.__setattr__(self, "dims", tuple(self.dims.replace(",", " ").split()))
        else:
            object.__setattr__(self, "dims", tuple(self.dims))

    @property
    def axes(self) -> tuple[str | int, ...]:
        return self.dims  # type: ignore[return-value]


@dataclass(frozen=True)
class Scalar:
    """A scalar kernel argument of C type `ctype`: a dim (`Scalar("rows")`, or value naming
    one), a constant (`Scalar("eps", "float", 1e-6)`) or a function of the dims
    (`Scalar("n", "long long", lambda d: d.rows * d.cols)`)."""

    name: str
    ctype: str = "long long"
    value: ScalarValue = None

    def resolve(self, dims: Mapping[str, int]) -> Any:
        """The value as the kernel's C type (a NumPy scalar)."""
        value = self.value
        if value is None or isinstance(value, str):
            raw: int | float = dims[value or self.name]
        elif callable(value):
            raw = value(dims if isinstance(dims, Dims) else Dims(dims))
        else:
            raw = value
        return CTYPES[self.ctype](raw)


@dataclass(frozen=True)
class TorchCall:
    """A baseline written against torch tensors; listed only when torch imports."""

    fn: Callable[..., Any]


def torch_call(fn: Callable[..., Any]) -> TorchCall:
    """Mark a library baseline as torch code: `"torch": torch_call(lambda x: x.softmax(-1))`.
    It runs on the inputs as tensors (no copy) on cudabench's stream."""
    return TorchCall(fn)


@dataclass(frozen=True)
class VariantInfo:
    """What `@variant(...)` records on a Python variant (read again in the worker)."""

    name: str
    dtypes: tuple[str, ...]
    about: str
    writes: bool = False  # called as f(*inputs, out), writing out; else f(*inputs) -> output
    needs: tuple[str, ...] = ()  # modules that must import (else the row is N/A, saying so)
    gpu: bool = False  # needs GPU arrays (the fake backend's NumPy arrays make it N/A)
    requires: tuple[tuple[str, int], ...] = ()  # the op's `requires:` names, e.g. max_cols
    host: bool = False  # needs NumPy arrays (a host emulation): N/A on a GPU backend


def variant(
    name: str | None = None,
    dtypes: tuple[str, ...] | list[str] | str = ("float32",),
    about: str = "",
    writes: bool = False,
    needs: tuple[str, ...] | list[str] = (),
    gpu: bool = False,
    requires: Mapping[str, int] | None = None,
    host: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Make a function a Python variant of the op whose folder holds its file. It takes the
    op's inputs (and, with writes=True, the output after them, which it fills) and runs on
    whatever arrays the backend has (CuPy on a GPU). `needs`: modules that must import (else
    its row is N/A, saying which); `gpu`: it needs GPU arrays (N/A on the fake backend);
    `requires`: limits in the op's `requires:` names (`{"max_cols": 8192}`: N/A past them);
    `host`: it needs NumPy arrays (an emulation of a kernel's arithmetic on the host, say):
    N/A on a GPU backend, whose arrays are CuPy's. Arguments must be literals: `cudabench
    list` reads them without importing the file."""
    from cudabench.core.dtypes import DTYPES

    names = (dtypes,) if isinstance(dtypes, str) else tuple(dtypes)
    unknown = [d for d in names if d not in DTYPES]
    if unknown or not names:
        raise ValueError(f"@variant dtypes {list(names)}: choose from {', '.join(DTYPES)}")

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        label = name or fn.__name__
        if not _NAME.match(label):
            raise ValueError(f"@variant name {label!r} must be a plain identifier")
        fn.__cudabench_variant__ = VariantInfo(  # type: ignore[attr-defined]
            label,
            names,
            about or (fn.__doc__ or "").strip().split("\n")[0],
            writes,
            tuple(needs),
            gpu,
            tuple(sorted((requires or {}).items())),
            host,
        )
        return fn

    return mark
