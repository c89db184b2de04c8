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
cupyx.profiler.benchmark). Bad input raises `cudabench.SweepError` (a `cudabench.UsageError`:
one line). Importing `cudabench` still needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.core.errors import SweepError
from cudabench.core.records import Measurement, TimingOptions
from cudabench.execution.plan import Plan, plan
from cudabench.execution.pool import DEFAULT_TIMEOUT_S
from cudabench.execution.session import Cluster, Local, Session, Where, parse_devices
from cudabench.record.history import HistoryError
from cudabench.record.results import rows_frame

if TYPE_CHECKING:
    import pandas as pd

    from cudabench.backends.base import Backend

ShapeLike = str | int | tuple[int, ...]


def _shape_text(shape: ShapeLike) -> str:
    if isinstance(shape, tuple):
        return "x".join(str(d) for d in shape)
    return str(shape)


def _shape_texts(shapes: Iterable[ShapeLike] | ShapeLike | None) -> list[str] | None:
    """Shapes as --shape texts; one shape given alone ("1024", 1024, (64, 128)) is one shape,
    not a list of characters or numbers."""
    if shapes is None:
        return None
    if isinstance(shapes, (str, int, tuple)):
        return [_shape_text(shapes)]
    return [_shape_text(s) for s in shapes]


def _names(names: Iterable[str] | str | None) -> list[str] | None:
    """Variant, dtype or folder names; one given alone is one name."""
    if names is None:
        return None
    return [names] if isinstance(names, (str, Path)) else [str(n) for n in names]


def _param_texts(params: dict[str, Iterable[int]] | None) -> list[str]:
    """{"BLOCK": [128, 256]} -> ["BLOCK=128,256"], the --param form."""
    return [f"{n}={','.join(str(v) for v in values)}" for n, values in (params or {}).items()]


def _check_timing(timing: dict[str, Any], function: Callable[..., Any]) -> None:
    """Keywords beyond the function's own must be TimingOptions fields; a misspelt one is
    named with the closest keyword (`shape=` -> did you mean shapes?)."""
    import difflib
    import inspect

    fields = [f.name for f in dataclasses.fields(TimingOptions)]
    for name in timing:
        if name in fields:
            continue
        known = [p for p in inspect.signature(function).parameters if p != "timing"] + fields
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise SweepError(
            f"{function.__name__}() got an unknown keyword {name!r}{hint}; it takes {', '.join(known)}"
        )


def _where(devices: str, timeout_s: float, cluster: str | None, gpu_model: str | None) -> Where:
    return Cluster(cluster, timeout_s, gpu_model) if cluster else Local(parse_devices(devices), timeout_s)


def _plan(
    target: str,
    shapes: Any,
    variants: Any,
    dtypes: Any,
    kernels: Any,
    params: dict[str, Iterable[int]] | None,
    expand: bool,
    timing: dict[str, Any],
    ops: Any = None,
) -> Plan:
    return plan(
        target,
        _shape_texts(shapes),
        _names(variants),
        [Path(k) for k in _names(kernels) or []] or None,
        _names(dtypes),
        _param_texts(params),
        expand=expand,
        ops=[Path(o) for o in _names(ops) or []] or None,
        **timing,
    )


def run(
    target: str,
    shapes: Iterable[ShapeLike] | None = None,
    variants: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    kernels: Iterable[str | Path] | None = None,
    devices: str = "0",
    output: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    params: dict[str, Iterable[int]] | None = None,
    tag: str = "",
    db: str | Path | None = None,
    ceilings: bool = True,
    tuned: bool = True,
    cluster: str | None = None,
    gpu_model: str | None = None,
    ops: Iterable[str | Path] | str | Path | None = None,
    **timing: Any,
) -> pd.DataFrame:
    """Validate and time an op's variants (or a config file's benchmarks), as `cudabench run`
    does, and return the rows as a DataFrame (the results CSV's columns); the run is in the
    history database too (`tag` names it, `db` moves it). `params` is a grid of launch
    parameters, as --param: {"BLOCK": [128, 256]}. `ceilings`: the `pct_ceiling` column from
    this GPU's kept ceilings (measured first when there are none), as run's --ceilings;
    `tuned`: the tuning file's configurations, as run's --tuned. `ops`: your op folders,
    as --ops. `cluster` runs on a Dask
    cluster (a scheduler address or 'local', as --cluster; `gpu_model` as --gpu-model).
    `timing` takes TimingOptions fields: cold, warmup, min_samples, min_time_s, max_time_s,
    interleave, timer, and the telemetry's drop_throttled, settle, cooldown_c, energy,
    fill, clocks."""
    _check_timing(timing, run)
    work = _plan(target, shapes, variants, dtypes, kernels, params, True, timing, ops)
    command = f"cudabench.run({target!r}, shapes={_shape_texts(shapes)!r})"
    with Session.open(_where(devices, timeout_s, cluster, gpu_model), work.timing.timer) as session:
        work = session.prepare(work, tuned)
        sweep = session.start(
            work.op_label,
            work.timing,
            command,
            output=Path(output) if output else None,
            db=Path(db) if db else None,
            tag=tag,
            ceilings=ceilings,
        )
        if session.history_error:
            raise HistoryError(session.history_error)
        sweep.run(work.jobs)
        session.finish()
    if session.problems:
        raise HistoryError(session.problems)
    return rows_frame(sweep.rows)


def tune(
    target: str,
    shapes: Iterable[ShapeLike] | None = None,
    variants: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
    params: dict[str, Iterable[int]] | None = None,
    strategy: str = "auto",
    budget: int = 200,
    seed: int = 0,
    save: bool = True,
    kernels: Iterable[str | Path] | None = None,
    devices: str = "0",
    output: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    tag: str = "",
    db: str | Path | None = None,
    cluster: str | None = None,
    gpu_model: str | None = None,
    ops: Iterable[str | Path] | str | Path | None = None,
    **timing: Any,
) -> pd.DataFrame:
    """`cudabench tune` without the terminal: search each variant's launch parameters (the
    same plan, sweep, validation, final interleaved round and tuning file), and return one
    row per search: op, variant, shape, dtype, the best `params`, its `time_us`,
    `default_time_us`, `speedup_over_default`, the `ties` (configurations within the noise),
    `measured` and the `results` file holding every configuration. `params` narrows the
    space: {"BLOCK": [128, 256]}."""
    import pandas as pd

    from cudabench.record import tuning_file
    from cudabench.tuning import search, strategies

    _check_timing(timing, tune)
    work = _plan(target, shapes, variants, dtypes, kernels, params, False, timing, ops)
    searches = search.plan_searches(work.jobs, work.narrowing, named=bool(variants))
    walkers = [strategies.make_strategy(strategy, space, budget, seed) for _, space in searches]
    command = f"cudabench.tune({target!r}, shapes={_shape_texts(shapes)!r})"
    with Session.open(_where(devices, timeout_s, cluster, gpu_model), work.timing.timer) as session:
        work = session.prepare(work, tuned=False)
        searching = session.start(
            f"tune_{work.op_label}",
            work.timing,
            command,
            output=Path(output) if output else None,
            db=Path(db) if db else None,
            tag=tag,
        )
        if session.history_error:
            raise HistoryError(session.history_error)
        outcomes = search.run_searches(
            work.jobs, searches, walkers, budget, work.timing, searching, session.compile_arch
        )
        _, json_path = session.finish([r for o in outcomes for r in o.rows])
    info = session.info
    found = []
    for outcome in outcomes:
        best = outcome.best
        if save and best is not None and best.time_us is not None:
            tuning_file.save(search.entry_of(outcome, info.name, str(json_path.resolve())))
        found.append(
            {
                "op": outcome.case.op,
                "variant": outcome.space.variant.name,
                "shape": outcome.case.shape_text,
                "dtype": outcome.case.dtype,
                "params": best.params if best else None,
                "time_us": best.time_us if best else None,
                "default_time_us": outcome.default.time_us if outcome.default else None,
                "speedup_over_default": outcome.speedup_over_default,
                "ties": [r.params for r in outcome.ties[1:]],
                "measured": outcome.measured,
                "strategy": outcome.strategy,
                "results": str(json_path.resolve()),
            }
        )
    return pd.DataFrame(found)


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


def verify(
    target: str,
    variants: Iterable[str] | str | None = None,
    dtypes: Iterable[str] | str | None = None,
    budget_s: float = 60.0,
    examples: int = 100,
    seed: int = 0,
    params: dict[str, Iterable[int]] | None = None,
    kernels: Iterable[str | Path] | None = None,
    ops: Iterable[str | Path] | str | Path | None = None,
    devices: str = "0",
    output: str | Path | None = None,
    timeout_s: float = 60.0,
    tag: str = "",
    db: str | Path | None = None,
) -> pd.DataFrame:
    """`cudabench verify` without the terminal: for each variant (and dtype), the smallest
    shape where it is wrong, searched within `budget_s` seconds (usecases/verify.py). One row
    per variant: op, variant, dtype, `verdict` (verified, wrong, does not compile, untested),
    `shapes` (how many ran), `smallest`/`largest` of them, `wrong_at`, `status`, `detail`,
    `found_at` (before shrinking), `complete` (False: the budget ran out), `seconds`,
    `reproduce` (the `cudabench run` line) and `results` (the rows of every shape checked)."""
    import pandas as pd

    from cudabench.usecases import verify as usecase

    request = usecase.VerifyRequest(
        target=target,
        variants=tuple(_names(variants) or ()),
        dtypes=tuple(_names(dtypes) or ()),
        params=tuple(_param_texts(params)),
        kernels=tuple(Path(k) for k in _names(kernels) or []),  # type: ignore[arg-type]
        ops=tuple(Path(o) for o in _names(ops) or []),  # type: ignore[arg-type]
        budget_s=budget_s,
        examples=examples,
        seed=seed,
        where=Local(parse_devices(devices), timeout_s),
        output=Path(output) if output else None,
        db=Path(db) if db else None,
        tag=tag,
        command=f"cudabench.verify({target!r})",
    )
    outcome = usecase.verify(request)
    if outcome.history_error:
        raise HistoryError(outcome.history_error)
    return pd.DataFrame([usecase.as_record(v, outcome.json) for v in outcome.verdicts])
