"""Is the NVIDIA driver here: a probe that imports no CuPy, and the line that says it is not."""

from __future__ import annotations

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
