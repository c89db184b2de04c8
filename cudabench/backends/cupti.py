"""The kernel clock's collector: CUPTI activity records through NVIDIA's cupti-python.

One `CuptiCollector` a process (CUPTI's activity API is process-wide). While a `session()` is
open, CUPTI writes a record for every kernel (CONCURRENT_KERNEL: GPU start and end, ns) and
every CUDA API call (DRIVER, RUNTIME: needed, or no EXTERNAL_CORRELATION records are made);
`tag(sample_id)` pushes an external correlation id around a sample's launches, so each API
call made there gets an EXTERNAL_CORRELATION record (CUPTI correlation id -> sample id).
`records()` flushes CUPTI's buffers and returns the kernel records and that map; the
arithmetic (records -> per-launch times) is cupti_clock.py's.

The buffer callback copies the three or four fields it needs out of each record and keeps no
record object: a few hundred nanoseconds a record, and nothing else is done per record.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from cudabench.backends.cupti_clock import KernelClockUnavailable, KernelRecord, check_dropped

BUFFER_BYTES = 8 << 20  # CUPTI asks for a new one whenever one fills
FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: incomplete buffers too


def _preload_libcupti() -> None:
    """Load the libcupti of the nvidia-cuda-cupti wheel (the version cupti-python is built
    against) ahead of any older one a CUDA toolkit puts on the loader's path."""
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for lib in sorted(Path(root).glob("cu*/lib/libcupti.so*")):
            try:
                ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def _load() -> Any:
    try:
        _preload_libcupti()
        from cupti import cupti
    except Exception as exc:  # ImportError, or the library failing to load
        raise KernelClockUnavailable(
            f"cupti-python does not load ({type(exc).__name__}: {_line(exc)}); it comes with "
            "pip install -e '.[cuda13]'"
        ) from None
    return cupti


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class CuptiCollector:
    """Kernel and external-correlation records of this process, collected while a
    `session()` is open. KernelClockUnavailable from the constructor or
    `probe()` when CUPTI cannot run (not installed, no driver, a profiler such as ncu or
    nsys already holds it)."""

    def __init__(self) -> None:
        self.cupti = _load()
        c = self.cupti
        self._kernel = int(c.ActivityKind.CONCURRENT_KERNEL)
        self._external = int(c.ActivityKind.EXTERNAL_CORRELATION)
        self._mine = int(c.ExternalCorrelationKind.CUSTOM2)  # CUSTOM0/1: torch's profiler
        self.kinds = (
            c.ActivityKind.CONCURRENT_KERNEL,
            c.ActivityKind.EXTERNAL_CORRELATION,
            c.ActivityKind.DRIVER,
            c.ActivityKind.RUNTIME,
        )
        self._lock = threading.Lock()
        self._kernels: list[KernelRecord] = []
        self._map: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._active = False
        try:
            c.activity_register_callbacks(self._requested, self._completed)
        except Exception as exc:
            raise KernelClockUnavailable(f"CUPTI refused its buffers: {_line(exc)}") from None

    def probe(self) -> None:
        """Start and stop kernel tracing once: KernelClockUnavailable if CUPTI cannot."""
        with self.session():
            pass

    # ---------------------------------------------------------------- CUPTI's callbacks

    def _requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0  # 0: as many records as fit

    def _completed(self, records: Any) -> None:
        kernels, mapped = [], {}
        kernel, external, mine = self._kernel, self._external, self._mine
        for r in records:
            kind = int(r.kind)
            if kind == kernel:
                kernels.append(KernelRecord(int(r.correlation_id), int(r.start), int(r.end)))
            elif kind == external and int(r.external_kind) == mine:
                mapped[int(r.correlation_id)] = int(r.external_id)
        with self._lock:
            self._kernels += kernels
            self._map.update(mapped)

    # ---------------------------------------------------------------- the session

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Records are collected inside; the kinds are disabled again on the way out."""
        if self._active:  # nested (interleaved samplers share the outer one)
            yield
            return
        with self._lock:
            self._kernels, self._map = [], {}
        enabled = []
        try:
            for kind in self.kinds:
                self.cupti.activity_enable(kind)
                enabled.append(kind)
        except Exception as exc:
            self._disable(enabled)
            raise KernelClockUnavailable(
                f"CUPTI cannot trace kernels ({_line(exc)}): is another profiler (ncu, nsys) attached?"
            ) from None
        self._active = True
        try:
            yield
        finally:
            self._active = False
            self._disable(enabled)

    def _disable(self, kinds: list[Any]) -> None:
        for kind in kinds:
            with contextlib.suppress(Exception):
                self.cupti.activity_disable(kind)

    def new_id(self) -> int:
        return next(self._ids)

    @contextlib.contextmanager
    def tag(self, sample_id: int) -> Iterator[None]:
        """Every CUDA API call made inside belongs to sample `sample_id`."""
        self.cupti.activity_push_external_correlation_id(self._mine, sample_id)
        try:
            yield
        finally:
            self.cupti.activity_pop_external_correlation_id(self._mine)

    def records(self) -> tuple[list[KernelRecord], dict[int, int]]:
        """Flush CUPTI's buffers (the caller has synchronized the stream) and return every
        record of this session so far (each sampler of an interleaved measurement picks
        its own samples from them); RecordsMissing if CUPTI dropped any."""
        self.cupti.activity_flush_all(FLUSH_FORCED)
        dropped = np.zeros(1, dtype=np.uint64)
        with contextlib.suppress(Exception):  # 0 (the global queue): all contexts
            self.cupti.activity_get_num_dropped_records(0, 0, dropped.ctypes.data)
        check_dropped(int(dropped[0]))
        with self._lock:
            return list(self._kernels), dict(self._map)


_COLLECTOR: CuptiCollector | None = None
_UNAVAILABLE = ""


def collector() -> CuptiCollector:
    """This process's collector, made (and probed) once; KernelClockUnavailable, the same
    each time, when CUPTI cannot run."""
    global _COLLECTOR, _UNAVAILABLE
    if _UNAVAILABLE:
        raise KernelClockUnavailable(_UNAVAILABLE)
    if _COLLECTOR is None:
        try:
            made = CuptiCollector()
            made.probe()
        except KernelClockUnavailable as exc:
            _UNAVAILABLE = str(exc)
            raise
        _COLLECTOR = made
    return _COLLECTOR
