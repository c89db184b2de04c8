"""The plumbing the corpus's Triton variants share (not a variant file: its name starts with
`_`; the variant files import it by path, as they do _f32.py): the CuPy arrays a run hands a
variant as torch tensors (DLPack, no copy), made once per input set outside the timed calls,
and the launch on cudabench's own stream, as kernels/softmax/triton_rows.py does. triton and
torch are imported when a variant first runs, so the files import without them (their rows
are then N/A, saying which)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

BLOCK = 1024  # elements a Triton program takes at a time: one compile per kernel and dtype
WARPS = 4

_tensors: dict[tuple[int, ...], Any] = {}  # one input set at a time: its tensors and stream


def launch(arrays: tuple[Any, ...], run: Callable[..., None]) -> None:
    """`run(*tensors)` on cudabench's current stream, the tensors sharing the arrays' memory."""
    import cupy
    import torch

    stream = cupy.cuda.get_current_stream().ptr
    key = (stream, *(id(a) for a in arrays))
    if key not in _tensors:  # holding the arrays keeps their ids unique while cached
        _tensors.clear()
        tensors = tuple(torch.from_dlpack(a) for a in arrays)
        _tensors[key] = (arrays, tensors, torch.cuda.ExternalStream(stream))
    _, tensors, torch_stream = _tensors[key]
    with torch.cuda.stream(torch_stream):
        run(*tensors)


def rows_of(x: Any) -> tuple[int, int]:
    """(rows, cols) of a row op's input: a 1-D array is one row."""
    cols = int(x.shape[-1])
    return int(x.size) // cols, cols
