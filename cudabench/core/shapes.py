"""Shape text <-> tuples: `442368x128`, `1073741824`, `2^30`, `1e6`, `2^10x128`.

Each dimension is a positive integer written plainly, as a power (`2^30`) or in exponent
form (`1e6`, which must be a whole number). Dimensions are joined by `x`.
"""

from __future__ import annotations

import re

from cudabench.core.records import Shape

_POWER = re.compile(r"^(\d+)\^(\d+)$")
_EXP = re.compile(r"^(\d+(?:\.\d+)?)[eE](\d+)$")
_INT = re.compile(r"^\d+$")
MAX_DIM = 1 << 40  # larger than any GPU memory holds in float32; guards against typos


def shape_text(shape: Shape) -> str:
    """A shape as --shape writes it: (442368, 128) -> `442368x128`."""
    return "x".join(map(str, shape))


class ShapeError(ValueError):
    """A shape text that cannot be read; the message says which part and why."""


def _dim(text: str, whole: str) -> int:
    part = text.strip()
    if _INT.match(part):
        value = int(part)
    elif m := _POWER.match(part):
        base, exp = int(m.group(1)), int(m.group(2))
        if exp > 64:
            raise ShapeError(f"shape {whole!r}: {part!r} is too large")
        value = base**exp
    elif m := _EXP.match(part):
        mantissa, exp = m.group(1), int(m.group(2))
        if exp > 20:
            raise ShapeError(f"shape {whole!r}: {part!r} is too large")
        # exact decimal arithmetic: 1.5e3 -> 1500, 1.25e1 -> not whole
        digits = mantissa.replace(".", "")
        frac = len(mantissa.split(".")[1]) if "." in mantissa else 0
        if exp < frac and int(digits[len(digits) - (frac - exp) :] or "0") != 0:
            raise ShapeError(f"shape {whole!r}: {part!r} is not a whole number")
        value = int(digits) * 10**exp // 10**frac
    elif part == "":
        raise ShapeError(f"shape {whole!r}: empty dimension (write e.g. 442368x128)")
    elif part.startswith("-"):
        raise ShapeError(f"shape {whole!r}: dimensions must be positive, got {part!r}")
    else:
        raise ShapeError(f"shape {whole!r}: {part!r} is not a number (write 442368x128, 2^30 or 1e6)")
    if value <= 0:
        raise ShapeError(f"shape {whole!r}: dimensions must be positive, got {part!r}")
    if value > MAX_DIM:
        raise ShapeError(f"shape {whole!r}: {part!r} is larger than {MAX_DIM}")
    return value


def parse_shape(text: str | int) -> Shape:
    """`"442368x128"` -> `(442368, 128)`; an int is a 1-D shape. Raises ShapeError."""
    if isinstance(text, bool):
        raise ShapeError(f"shape {text!r} is not a shape")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise ShapeError(f"shape {text!r} is not a shape like 442368x128")
    whole = text.strip()
    if not whole:
        raise ShapeError("shape '' is empty (write e.g. 442368x128)")
    return tuple(_dim(part, whole) for part in whole.lower().split("x"))
