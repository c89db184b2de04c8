"""PyTorch as a baseline, when it is importable: the calls a user would otherwise make.

The tensors share memory with cudabench's arrays (DLPack, no copy), and torch runs on
cudabench's own stream (an ExternalStream), so the same events and graphs time it. With the
fake backend (NumPy arrays) torch runs on the CPU, which tests the plumbing only.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any


@functools.cache
def available() -> bool:
    """Whether torch is installed: found, not imported (importing it takes about 4 s, which
    planning a run must not pay; the worker that runs the rows imports it, `warm`). A broken
    install shows as torch rows with status ERROR and the import's message."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def warm(device: int) -> None:
    """Import torch and start its CUDA state on `device`, as a worker starts (`--preload
    torch`), so that the first torch row does not pay it: about 4.5 s on an H200 machine,
    which fell on tune's final round. A broken install is left to the rows to say."""
    try:
        import torch

        if torch.cuda.is_available():
            with torch.cuda.device(device):  # this worker's GPU, not GPU 0
                torch.cuda.init()
    except Exception:  # the torch rows say why, with status ERROR
        pass


def call(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...]], Any]:
    """A baseline that runs `fn(*tensors)` on the inputs and returns an array like them.

    The input tensors and the stream wrapper are made once per input set, not per call: in
    single-launch timing, host work between the start event and the kernel that outlasts the
    spin that holds the GPU shows up as GPU time (torch rows read up to 3x their ncu time with
    the conversions inside the call, H100, 2026-11-23)."""
    cache: dict[tuple[int, ...], tuple[Any, ...]] = {}

    def run(inputs: tuple[Any, ...]) -> Any:
        import numpy as np
        import torch

        if isinstance(inputs[0], np.ndarray):
            return fn(*(torch.from_numpy(x) for x in inputs)).numpy()
        import cupy as cp

        ptr = cp.cuda.get_current_stream().ptr
        key = (ptr, *(id(x) for x in inputs))
        if key not in cache:  # one input set at a time; holding `inputs` keeps the ids unique
            cache.clear()
            tensors = tuple(torch.from_dlpack(x) for x in inputs)
            cache[key] = (inputs, tensors, torch.cuda.ExternalStream(ptr))
        _, tensors, stream = cache[key]
        with torch.cuda.stream(stream):
            result = fn(*tensors)
        return cp.from_dlpack(result)

    return run
