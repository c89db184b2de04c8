"""The Python API: the CLI's own sweep and clock, for notebooks and performance tests.

    import cudabench
    df = cudabench.run("reduce", shapes=["2^24", "442368x128"], variants=["float4"])
    m = cudabench.timeit(lambda: x.sum(), cold=True)      # any CuPy or torch callable
    m.median_ms, m.spread, m.samples_ms
    best = cudabench.tune("reduce", shapes=["2^24"], variants=["float4"], budget=50)

`run` is `cudabench run` without the terminal: the same plan, worker processes, validation,
timing and results files (results/<time>_<op>.csv/.json), returning the rows as the DataFrame
the CSV holds. `timeit` gives a callable the measure module's warm-up, CUDA-graph batching,
L2 flush (`cold=True`) and stopping rule (the peers it replaces: triton.testing.do_bench,
cupyx.profiler.benchmark). Bad input raises `cudabench.sweep.SweepError` (one line). Importing
`cudabench` still needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench import sweep
from cudabench.pool import DEFAULT_TIMEOUT_S
from cudabench.history import HistoryError
from cudabench.results import now_utc, rows_frame
from cudabench.spec import Measurement, TimingOptions

if TYPE_CHECKING:
    import pandas as pd

    from cudabench.backends.base import Backend

ShapeLike = str | int | tuple[int, ...]


def _shape_text(shape: ShapeLike) -> str:
    if isinstance(shape, tuple):
        return "x".join(str(d) for d in shape)
    return str(shape)


def _param_texts(params: dict[str, Iterable[int]] | None) -> list[str]:
    """{"BLOCK": [128, 256]} -> ["BLOCK=128,256"], the --param form."""
    return [f"{n}={','.join(str(v) for v in values)}" for n, values in (params or {}).items()]


def _check_timing(timing: dict[str, Any]) -> None:
    unknown = set(timing) - {f.name for f in dataclasses.fields(TimingOptions)}
    if unknown:
        raise sweep.SweepError(f"unknown timing option(s) {sorted(unknown)}")


def run(target: str, shapes: Iterable[ShapeLike] | None = None,
        variants: Iterable[str] | None = None, dtypes: Iterable[str] | None = None,
        kernels: Iterable[str | Path] | None = None, devices: str = "0",
        output: str | Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
        params: dict[str, Iterable[int]] | None = None, tag: str = "",
        db: str | Path | None = None, ceilings: bool = True,
        **timing: Any) -> pd.DataFrame:  # fmt: skip
    """Validate and time an op's variants (or a config file's benchmarks), as `cudabench run`
    does, and return the rows as a DataFrame (the results CSV's columns); the run is in the
    history database too (`tag` names it, `db` moves it). `params` is a grid of launch
    parameters, as --param: {"BLOCK": [128, 256]}. `ceilings`: the `pct_ceiling` column from
    this GPU's kept ceilings (measured first when there are none), as run's --ceilings.
    `timing` takes TimingOptions fields: cold, warmup, min_samples, min_time_s, max_time_s,
    interleave, timer."""
    _check_timing(timing)
    shape_texts = [_shape_text(s) for s in shapes] if shapes is not None else None
    work = sweep.plan(
        target, shape_texts, list(variants) if variants else None,
        [Path(k) for k in kernels] if kernels else None,
        list(dtypes) if dtypes else None, _param_texts(params), **timing,
    )  # fmt: skip
    pool = sweep.open_workers(sweep.parse_devices(devices), timeout_s, work.timing.timer)
    work = sweep.apply_tuned(work, pool.info.name)  # type: ignore[union-attr]
    started = now_utc()
    stem = sweep.results_stem(Path(output) if output else None, work.op_label, started)
    command = f"cudabench.run({target!r}, shapes={shape_texts!r})"
    meta = sweep.run_meta(pool.info, pool.versions, work.timing, command, started,
                          pool.devices)  # type: ignore[arg-type]
    history = sweep.open_history(Path(db) if db else None)  # HistoryError: one line
    try:
        with pool:
            execute = sweep.on_workers(pool)
            if ceilings:
                meta = sweep.use_ceilings(execute, meta, pool.versions, output=stem.parent,
                                          history=history)  # fmt: skip
            done = sweep.run_jobs(work, execute, stem, meta, history=history, tag=tag)
        done.finish()
    finally:
        history.close()
    if done.history_error:
        raise HistoryError(done.history_error)
    return rows_frame(done.rows)


def tune(target: str, shapes: Iterable[ShapeLike] | None = None,
         variants: Iterable[str] | None = None, dtypes: Iterable[str] | None = None,
         params: dict[str, Iterable[int]] | None = None, strategy: str = "auto",
         budget: int = 200, seed: int = 0, save: bool = True,
         kernels: Iterable[str | Path] | None = None, devices: str = "0",
         output: str | Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
         tag: str = "", db: str | Path | None = None, **timing: Any) -> pd.DataFrame:  # fmt: skip
    """`cudabench tune` without the terminal: search each variant's launch parameters (the
    same plan, sweep, validation, final interleaved round and tuning file), and return one
    row per search: op, variant, shape, dtype, the best `params`, its `time_us`,
    `default_time_us`, `speedup_over_default`, the `ties` (configurations within the noise),
    `measured` and the `results` file holding every configuration. `params` narrows the
    space: {"BLOCK": [128, 256]}."""
    import pandas as pd

    from cudabench import tuner
    from cudabench import tuning

    _check_timing(timing)
    shape_texts = [_shape_text(s) for s in shapes] if shapes is not None else None
    work = sweep.plan(
        target, shape_texts, list(variants) if variants else None,
        [Path(k) for k in kernels] if kernels else None,
        list(dtypes) if dtypes else None, _param_texts(params), expand=False, **timing,
    )  # fmt: skip
    searches = tuner.plan_searches(work.jobs, work.narrowing, named=bool(variants))
    strategies = [tuner.make_strategy(strategy, space, budget, seed) for _, space in searches]
    pool = sweep.open_workers(sweep.parse_devices(devices), timeout_s, work.timing.timer)
    started = now_utc()
    stem = sweep.results_stem(Path(output) if output else None, f"tune_{work.op_label}", started)
    meta = sweep.run_meta(pool.info, pool.versions, work.timing,  # type: ignore[arg-type]
                          f"cudabench.tune({target!r}, shapes={shape_texts!r})", started,
                          pool.devices)  # fmt: skip
    from cudabench.backends import backend_name

    history = sweep.open_history(Path(db) if db else None)
    try:
        with pool:
            arch = pool.info.arch if backend_name() == "cupy" else None  # type: ignore[union-attr]
            searching = sweep.Sweep(sweep.on_workers(pool), stem, meta, history=history, tag=tag)
            outcomes = tuner.run_searches(work.jobs, searches, strategies, budget, work.timing,
                                          searching, arch)  # fmt: skip
        _, json_path = searching.finish([r for o in outcomes for r in o.rows])
    finally:
        history.close()
    found = []
    for outcome in outcomes:
        best = outcome.best
        if save and best is not None and best.time_us is not None:
            tuning.save(tuner.entry_of(outcome, pool.info.name, str(json_path.resolve())))  # type: ignore[union-attr]
        found.append({
            "op": outcome.case.op, "variant": outcome.space.variant.name,
            "shape": outcome.case.shape_text, "dtype": outcome.case.dtype,
            "params": best.params if best else None, "time_us": best.time_us if best else None,
            "default_time_us": outcome.default.time_us if outcome.default else None,
            "speedup_over_default": outcome.speedup_over_default,
            "ties": [r.params for r in outcome.ties[1:]], "measured": outcome.measured,
            "strategy": outcome.strategy, "results": str(json_path.resolve()),
        })  # fmt: skip
    return pd.DataFrame(found)


@functools.cache
def _backend(name: str | None, device: int) -> Backend:
    from cudabench.backends import open_backend
    from cudabench.backends.base import BackendUnavailable

    try:
        return open_backend(name, device=device)
    except BackendUnavailable as exc:
        raise sweep.SweepError(str(exc)) from None


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


def timeit(fn: Callable[[], Any], *, cold: bool = False, warmup: int = 3, min_samples: int = 10,
           min_time_s: float = 0.2, max_time_s: float = 10.0, device: int = 0,
           backend: str | None = None, timer: str = "events") -> Measurement:  # fmt: skip
    """Time `fn` (one call of what is measured: a CuPy expression, a torch op, a RawKernel
    launch) with cudabench's clock: warm-up, then CUDA-graph batches for calls under 50 us
    (or one call per sample behind a spin that hides the launch overhead), `cold=True`
    flushing L2 before every sample, until `min_samples` and `min_time_s` are reached.
    `timer="cupti"` times each call's own kernels from CUPTI's records instead of CUDA events
    (one sample a call; `busy_ms` their summed durations, `events_ms` the events' samples);
    "auto" takes CUPTI where it can start. Returns the Measurement (median_ms, min_ms, spread,
    samples_ms, batch, method, timer). Runs in this process, on `device`; the default stays
    events, so CUPTI is not started in your process unless asked."""
    from cudabench.cupti_clock import TIMERS

    if timer not in TIMERS:
        raise sweep.SweepError(f"timer {timer!r}: choose {', '.join(TIMERS)}")
    options = TimingOptions(cold=cold, warmup=warmup, min_samples=min_samples,
                            min_time_s=min_time_s, max_time_s=max_time_s, timer=timer)  # fmt: skip
    from cudabench.measure import measure

    gpu = _backend(backend, device)
    return measure(gpu, _on_stream(fn, gpu), options)
