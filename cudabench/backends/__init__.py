"""Backends run kernels: `cupy_backend` on the GPU, `fake` with NumPy stand-ins for tests.

Both implement `base.Backend`. The CuPy backend is imported only when asked for, so
`import cudabench` and the CLI's `--help`, `list` and `check` never import CuPy.
"""

from __future__ import annotations

import os

from cudabench.backends.base import Backend, BackendUnavailable


def backend_name() -> str:
    """The backend `run` will use: $CUDABENCH_BACKEND, else `cupy`."""
    return os.environ.get("CUDABENCH_BACKEND", "cupy")


NO_DRIVER = (
    "no NVIDIA driver found (libcuda.so.1 does not load): run, tune, ceilings and "
    "profile need a GPU and its driver; list, check, compare, report and history "
    "work without one"
)


def driver_present() -> bool:
    """Whether the NVIDIA driver's library (libcuda) can be loaded on this machine: a
    probe of a millisecond that imports no CuPy."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


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
