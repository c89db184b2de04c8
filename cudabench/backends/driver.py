"""Is the NVIDIA driver here: a probe that imports no CuPy, and the line that says it is not;
and CUDA started on a device ahead of CuPy (a worker's start)."""

from __future__ import annotations

import threading

NO_DRIVER = (
    "no NVIDIA driver found (libcuda.so.1 does not load): run, tune, verify, ceilings and "
    "profile need a GPU and its driver (CUDABENCH_BACKEND=fake runs them on NumPy, its "
    "times scripted); list, check, tolerance, compare, report and history work without one"
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


def open_context_early(device: int) -> threading.Thread:
    """Start CUDA on `device` in a thread, before the caller imports CuPy: the driver's
    initialisation and the device's primary context (the one CUDA's runtime, so CuPy, then
    finds made) cost 0.3 to 0.55 s on an H200 machine, and the imports they overlap 0.9 to
    1.3 s (a worker's start: CuPy, cupyx, cudabench's modules). ctypes lets the interpreter
    go while the driver works. The thread gives up silently (no driver, no such device): the
    backend's own open says why. The context is held until the process exits, as a worker's
    is anyway."""
    import ctypes

    def retain() -> None:
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
            handle, context = ctypes.c_int(), ctypes.c_void_p()
            if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(handle), device) == 0:
                cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle)
        except (OSError, AttributeError):
            pass

    thread = threading.Thread(target=retain, name="cudabench-cuda-start", daemon=True)
    thread.start()
    return thread
