"""The API's arguments as the use cases take them: shapes given as text, ints or tuples, one
name or many, a parameter grid, the timing keywords checked against TimingOptions, and the
selection, placement and recording records built from them (as the CLI's options are)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cudabench.core.dtypes import DType
from cudabench.core.errors import SweepError
from cudabench.core.records import Shape
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.core.shapes import shape_text as core_shape_text
from cudabench.core.timing import TimingOptions
from cudabench.usecases.flow import Placement, Recording, Selection, parse_devices

ShapeLike = str | int | tuple[int, ...]


def shape_text(shape: ShapeLike) -> str:
    if isinstance(shape, tuple):
        return core_shape_text(shape)
    return str(shape)


def _many(shapes: Iterable[ShapeLike] | ShapeLike | None) -> list[ShapeLike] | None:
    """One shape given alone ("1024", 1024, (64, 128)) is one shape, not a list of
    characters or numbers."""
    if shapes is None:
        return None
    if isinstance(shapes, (str, int, tuple)):
        return [shapes]
    return list(shapes)


def shape_texts(shapes: Iterable[ShapeLike] | ShapeLike | None) -> list[str] | None:
    """The shapes as the command line would write them (the run's `command` metadata)."""
    many = _many(shapes)
    return None if many is None else [shape_text(s) for s in many]


def as_shapes(shapes: Iterable[ShapeLike] | ShapeLike | None) -> tuple[Shape, ...] | None:
    """Shapes as tuples: text ("2^24", "442368x128") read as --shape reads it, an int a 1-D
    shape, a tuple as it is; SweepError for one that does not read."""
    many = _many(shapes)
    if many is None:
        return None
    try:
        return tuple(parse_shape(s) if isinstance(s, (str, int)) else tuple(int(d) for d in s) for s in many)
    except ShapeError as exc:
        raise SweepError(str(exc)) from None


def as_shape(shape: ShapeLike) -> Shape:
    """One shape as a tuple (text read as --shape reads it)."""
    (found,) = as_shapes([shape]) or ()
    return found


def as_names(names: Iterable[Any] | Any | None) -> tuple[Any, ...] | None:
    """Variant, dtype or folder names; one given alone is one name."""
    if names is None:
        return None
    return (names,) if isinstance(names, (str, Path, DType)) else tuple(names)


def as_grid(params: Mapping[str, Iterable[int]] | None) -> dict[str, tuple[int, ...]]:
    """{"BLOCK": [128, 256]} -> {"BLOCK": (128, 256)}."""
    return {name: tuple(int(v) for v in values) for name, values in (params or {}).items()}


def check_timing(timing: dict[str, Any], function: Callable[..., Any]) -> None:
    """Keywords beyond the function's own must be TimingOptions fields; a misspelt one is
    named with the closest keyword (`shape=` -> did you mean shapes?)."""
    import difflib
    import inspect

    fields = [f.name for f in dataclasses.fields(TimingOptions)]
    for name in timing:
        if name in fields:
            continue
        known = [p for p in inspect.signature(function).parameters if p != "timing"] + fields
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise SweepError(
            f"{function.__name__}() got an unknown keyword {name!r}{hint}; it takes {', '.join(known)}"
        )


def selection(
    target: str,
    shapes: Any,
    variants: Any,
    dtypes: Any,
    kernels: Any,
    params: Mapping[str, Iterable[int]] | None,
    ops: Any,
    timing: dict[str, Any],
) -> Selection:
    return Selection(
        target,
        shapes=as_shapes(shapes),
        variants=as_names(variants),
        dtypes=as_names(dtypes),
        params=as_grid(params),
        kernels=tuple(Path(k) for k in as_names(kernels) or ()),
        ops=tuple(Path(o) for o in as_names(ops) or ()),
        timing=timing,
    )


def placement(devices: str, timeout_s: float, cluster: str | None, gpu_model: str | None) -> Placement:
    if cluster:
        return Placement(timeout_s=timeout_s, cluster=cluster, gpu_model=gpu_model)
    return Placement(parse_devices(devices), timeout_s, gpu_model=gpu_model)


def recording(output: str | Path | None, db: str | Path | None, tag: str, force: bool = False) -> Recording:
    return Recording(Path(output) if output else None, Path(db) if db else None, tag, force)
