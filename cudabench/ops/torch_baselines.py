"""PyTorch as a baseline, when it is importable: the calls a user would otherwise make.

The tensors share memory with cudabench's arrays (DLPack, no copy), and torch runs on
cudabench's own stream (an ExternalStream), so the same events and graphs time it. With the
fake backend (NumPy arrays) torch runs on the CPU, which tests the plumbing only.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any


@functools.cache
def available() -> bool:
    try:
        importlib.import_module("torch")
    except Exception:  # not installed, or a broken install: no torch rows
        return False
    return True


def call(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...]], Any]:
    """A baseline that runs `fn(*tensors)` on the inputs and returns an array like them."""

    def run(inputs: tuple[Any, ...]) -> Any:
        import numpy as np
        import torch

        if isinstance(inputs[0], np.ndarray):
            return fn(*(torch.from_numpy(x) for x in inputs)).numpy()
        import cupy as cp

        stream = torch.cuda.ExternalStream(cp.cuda.get_current_stream().ptr)
        with torch.cuda.stream(stream):
            result = fn(*(torch.from_dlpack(x) for x in inputs))
        return cp.from_dlpack(result)

    return run
