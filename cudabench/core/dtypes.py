"""The element types cudabench runs kernels in: one record each, from the command line
(`--dtype bfloat16`) to the kernel (`-DCB_T=__nv_bfloat16`) and the arrays (ml_dtypes).

Every kernel accumulates in float32, as CUB and torch do for half and bfloat16; only loads
and stores are in the element type. So a 16-bit result differs from the float64 reference
by the float32 arithmetic an op already allows for, plus the rounding of each output to the
element type, at most `unit_roundoff * |reference|` (round to nearest; half the subnormal
step for the tiniest outputs). `output_tolerance` adds that term; the inputs themselves are
exact: the reference is computed from them as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DType:
    name: str  # float32, float16, bfloat16: the name on the command line and in every row
    ctype: str  # the C++ type the kernel sees as `elem_t` (and as `T` in a template entry)
    itemsize: int  # bytes per element
    unit_roundoff: float  # half an ulp, relative: 2^-24, 2^-11, 2^-8
    short: str  # the define suffix: CB_DTYPE_F32, CB_DTYPE_F16, CB_DTYPE_BF16
    subnormal: float  # the smallest step: below the normal range rounding is absolute

    def array_type(self) -> Any:
        """The NumPy dtype CuPy and NumPy arrays of this type use (ml_dtypes for bfloat16)."""
        import numpy as np

        if self.name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)

    @property
    def defines(self) -> tuple[str, ...]:
        """The nvcc definitions that give a kernel file this element type."""
        return (f"-DCB_T={self.ctype}", f"-DCB_DTYPE_{self.short}")


FLOAT32 = DType("float32", "float", 4, 2.0**-24, "F32", 2.0**-149)
FLOAT16 = DType("float16", "__half", 2, 2.0**-11, "F16", 2.0**-24)
BFLOAT16 = DType("bfloat16", "__nv_bfloat16", 2, 2.0**-8, "BF16", 2.0**-133)
DTYPES: dict[str, DType] = {d.name: d for d in (FLOAT32, FLOAT16, BFLOAT16)}
ALL = "all"  # --dtype all: every dtype each variant supports


class UnknownDType(ValueError):
    """A dtype name cudabench does not know; the message suggests the closest."""


def get_dtype(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        from cudabench.core.names import closest

        raise UnknownDType(f"unknown dtype {name!r}{closest(name, list(DTYPES))}") from None


def output_tolerance(xp: Any, dtype: DType, ref: Any, tol: Any) -> Any:
    """An op's float32 tolerance plus the rounding of each output to `dtype`: half an ulp,
    `unit_roundoff * |ref|` in the normal range and half the subnormal step below it (a
    float16 softmax output of 1e-8 is a subnormal, rounded to a multiple of 2^-24)."""
    if dtype.name == "float32":
        return tol
    return tol + dtype.unit_roundoff * xp.abs(ref) + 0.5 * dtype.subnormal
