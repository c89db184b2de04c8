"""The API's clock: `timeit` times any callable (a CuPy expression, a torch op, a RawKernel
launch) in this process with the measure module's warm-up, CUDA-graph batching, L2 flush and
stopping rule (the peers it replaces: triton.testing.do_bench, cupyx.profiler.benchmark)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cudabench.core.errors import SweepError
from cudabench.core.timing import Measurement, TimingOptions

if TYPE_CHECKING:
    from cudabench.backends.base import Backend


@functools.cache
def _backend(name: str | None, device: int) -> Backend:
    from cudabench.backends import open_backend
    from cudabench.backends.base import BackendUnavailable

    try:
        return open_backend(name, device=device)
    except BackendUnavailable as exc:
        raise SweepError(str(exc)) from None


def _on_stream(fn: Callable[[], Any], backend: Backend) -> Callable[[], None]:
    """fn on the backend's stream: CuPy's calls already are (the backend makes its stream
    current); torch's are put there too when torch is loaded, so the events bracket them."""
    torch = sys.modules.get("torch")
    stream = getattr(backend, "stream", None)
    if torch is None or stream is None or not torch.cuda.is_available():
        return fn
    external = torch.cuda.ExternalStream(stream.ptr)

    def call() -> None:
        with torch.cuda.stream(external):
            fn()

    return call


def timeit(
    fn: Callable[[], Any],
    *,
    cold: bool = False,
    warmup: int = 3,
    min_samples: int = 10,
    min_time_s: float = 0.2,
    max_time_s: float = 10.0,
    device: int = 0,
    backend: str | None = None,
    timer: str = "events",
) -> Measurement:
    """Time `fn` (one call of what is measured: a CuPy expression, a torch op, a RawKernel
    launch) with cudabench's clock: warm-up, then CUDA-graph batches for calls under 50 us
    (or one call per sample behind a spin that hides the launch overhead), `cold=True`
    flushing L2 before every sample, until `min_samples` and `min_time_s` are reached.
    `timer="cupti"` times each call's own kernels from CUPTI's records instead of CUDA events
    (one sample a call; `busy_ms` their summed durations, `events_ms` the events' samples);
    "auto" takes CUPTI where it can start. Returns the Measurement (median_ms, min_ms, spread,
    samples_ms, batch, method, timer). Runs in this process, on `device`; the default stays
    events, so CUPTI is not started in your process unless asked."""
    from cudabench.backends.cupti_clock import TIMERS

    if timer not in TIMERS:
        raise SweepError(f"timer {timer!r}: choose {', '.join(TIMERS)}")
    options = TimingOptions(
        cold=cold,
        warmup=warmup,
        min_samples=min_samples,
        min_time_s=min_time_s,
        max_time_s=max_time_s,
        timer=timer,
    )
    from cudabench.measure.sampling import measure

    gpu = _backend(backend, device)
    return measure(gpu, _on_stream(fn, gpu), options)
