"""Backends run kernels: `cupy_backend` on the GPU, `fake` with NumPy stand-ins for tests.

Both implement `base.Backend`. The CuPy backend is imported only when asked for, so
`import cudabench` and the CLI's `--help`, `list` and `check` never import CuPy.
"""

from __future__ import annotations

import os

from cudabench.backends.base import Backend, BackendUnavailable
from cudabench.backends.driver import NO_DRIVER, driver_present

__all__ = ["NO_DRIVER", "Backend", "BackendUnavailable", "backend_name", "driver_present", "open_backend"]


def backend_name() -> str:
    """The backend `run` will use: $CUDABENCH_BACKEND, else (unset or empty) `cupy`."""
    return os.environ.get("CUDABENCH_BACKEND") or "cupy"


def open_backend(name: str | None = None, device: int = 0) -> Backend:
    """The backend named (default: $CUDABENCH_BACKEND, else `cupy`). Raises
    BackendUnavailable with a one-line reason when there is no GPU, driver or CuPy."""
    name = name or backend_name()
    if name == "cupy":
        from cudabench.backends.cupy_backend import CupyBackend

        return CupyBackend(device)
    if name == "fake":
        from cudabench.backends.fake import FakeBackend

        text = os.environ.get("CUDABENCH_FAKE_DEVICES", "1")
        if not text.isdigit():
            raise BackendUnavailable(f"CUDABENCH_FAKE_DEVICES={text!r}: give a count like 2")
        count = int(text)
        if not 0 <= device < count:
            raise BackendUnavailable(f"GPU {device} does not exist (this machine has {count})")
        return FakeBackend(devices=count)
    raise BackendUnavailable(f"unknown backend {name!r} (choose cupy or fake)")
