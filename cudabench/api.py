"""The Python API: the CLI's own use cases and clock, for notebooks, scripts and performance
tests.

    import cudabench
    df = cudabench.run("reduce", shapes=["2^24", (442368, 128)], variants=["float4"])
    m = cudabench.timeit(lambda: x.sum(), cold=True)      # any CuPy or torch callable
    m.median_ms, m.spread, m.samples_ms
    best = cudabench.tune("reduce", shapes=["2^24"], variants=["float4"], budget=50)
    prof = cudabench.profile("reduce", shapes=["2^24"], variants=["float4"])   # under ncu
    roof = cudabench.ceilings()                            # this GPU's measured ceilings
    cmp = cudabench.compare("results/a.json", "results/b.json")
    cmp.gate.exit_status, cmp.gate.reasons, cmp.counts     # the CI gate's verdict as data
    hist = cudabench.history("reduce", variant="float4")   # a case's runs, regressions marked

Each function is a thin adapter over one use case (cudabench/usecases/): it takes Python
values, calls the use case with no observer (nothing is printed), and returns its record or
a DataFrame. `run` is `cudabench run` without the terminal: the same plan, worker processes,
validation, timing and results files (results/<time>_<op>.csv/.json), returning the rows as
the DataFrame the CSV holds. `timeit` gives a callable the measure module's warm-up,
CUDA-graph batching, L2 flush (`cold=True`) and stopping rule (the peers it replaces:
triton.testing.do_bench, cupyx.profiler.benchmark). Bad input raises `cudabench.SweepError`
(a `cudabench.UsageError`: one line). Importing `cudabench` still needs neither CuPy nor a
GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.core.dtypes import DType
from cudabench.core.errors import SweepError, UsageError
from cudabench.core.records import Ceilings, Measurement, Shape, TimingOptions
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.record.history import HistoryError
from cudabench.record.results import rows_frame
from cudabench.usecases.case_history import HistoryQuery, case_history
from cudabench.usecases.compare_runs import DEFAULT_THRESHOLD, CompareRequest, Comparison, compare_runs
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Failed, Placement, Recording, Selection, parse_devices
from cudabench.usecases.measure_ceilings import CeilingsRequest, measure_ceilings
from cudabench.usecases.profile_ncu import Profiling, profile_cases
from cudabench.usecases.run_benchmarks import RunRequest, run_benchmarks
from cudabench.usecases.tune_params import TuneRequest, tune_params

if TYPE_CHECKING:
    import pandas as pd

    from cudabench.backends.base import Backend

__all__ = [
    "Comparison",
    "Failed",
    "ceilings",
    "compare",
    "history",
    "profile",
    "run",
    "timeit",
    "tune",
]

ShapeLike = str | int | tuple[int, ...]


def _shape_text(shape: ShapeLike) -> str:
    if isinstance(shape, tuple):
        return "x".join(str(d) for d in shape)
    return str(shape)


def _many(shapes: Iterable[ShapeLike] | ShapeLike | None) -> list[ShapeLike] | None:
    """One shape given alone ("1024", 1024, (64, 128)) is one shape, not a list of
    characters or numbers."""
    if shapes is None:
        return None
    if isinstance(shapes, (str, int, tuple)):
        return [shapes]
    return list(shapes)


def _shape_texts(shapes: Iterable[ShapeLike] | ShapeLike | None) -> list[str] | None:
    """The shapes as the command line would write them (the run's `command` metadata)."""
    many = _many(shapes)
    return None if many is None else [_shape_text(s) for s in many]


def _shapes(shapes: Iterable[ShapeLike] | ShapeLike | None) -> tuple[Shape, ...] | None:
    """Shapes as tuples: text ("2^24", "442368x128") read as --shape reads it, an int a 1-D
    shape, a tuple as it is; SweepError for one that does not read."""
    many = _many(shapes)
    if many is None:
        return None
    try:
        return tuple(parse_shape(s) if isinstance(s, (str, int)) else tuple(int(d) for d in s) for s in many)
    except ShapeError as exc:
        raise SweepError(str(exc)) from None


def _shape(shape: ShapeLike) -> Shape:
    """One shape as a tuple (text read as --shape reads it)."""
    (found,) = _shapes([shape]) or ()
    return found


def _names(names: Iterable[Any] | Any | None) -> tuple[Any, ...] | None:
    """Variant, dtype or folder names; one given alone is one name."""
    if names is None:
        return None
    return (names,) if isinstance(names, (str, Path, DType)) else tuple(names)


def _grid(params: Mapping[str, Iterable[int]] | None) -> dict[str, tuple[int, ...]]:
    """{"BLOCK": [128, 256]} -> {"BLOCK": (128, 256)}."""
    return {name: tuple(int(v) for v in values) for name, values in (params or {}).items()}


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


def _selection(
    target: str,
    shapes: Any,
    variants: Any,
    dtypes: Any,
    kernels: Any,
    params: Mapping[str, Iterable[int]] | None,
    ops: Any,
    timing: dict[str, Any],
) -> Selection:
    return Selection(
        target,
        shapes=_shapes(shapes),
        variants=_names(variants),
        dtypes=_names(dtypes),
        params=_grid(params),
        kernels=tuple(Path(k) for k in _names(kernels) or ()),
        ops=tuple(Path(o) for o in _names(ops) or ()),
        timing=timing,
    )


def _placement(devices: str, timeout_s: float, cluster: str | None, gpu_model: str | None) -> Placement:
    if cluster:
        return Placement(timeout_s=timeout_s, cluster=cluster, gpu_model=gpu_model)
    return Placement(parse_devices(devices), timeout_s)


def _recording(output: str | Path | None, db: str | Path | None, tag: str, force: bool = False) -> Recording:
    return Recording(Path(output) if output else None, Path(db) if db else None, tag, force)


def run(
    target: str,
    shapes: Iterable[ShapeLike] | ShapeLike | None = None,
    variants: Iterable[str] | str | None = None,
    dtypes: Iterable[str | DType] | str | DType | None = None,
    kernels: Iterable[str | Path] | str | Path | None = None,
    devices: str = "0",
    output: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    params: Mapping[str, Iterable[int]] | None = None,
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
    history database too (`tag` names it, `db` moves it). `shapes`: tuples, ints or text
    ("2^24"); `params` is a grid of launch parameters, as --param: {"BLOCK": [128, 256]}.
    `ceilings`: the `pct_ceiling` column from this GPU's kept ceilings (measured first when
    there are none), as run's --ceilings; `tuned`: the tuning file's configurations, as run's
    --tuned. `ops`: your op folders, as --ops. `cluster` runs on a Dask cluster (a scheduler
    address or 'local', as --cluster; `gpu_model` as --gpu-model). `timing` takes
    TimingOptions fields: cold, warmup, min_samples, min_time_s, max_time_s, interleave,
    timer, and the telemetry's watch, drop_throttled, settle, cooldown_c, energy, fill, clocks.
    A history database that failed raises HistoryError once the run is saved."""
    _check_timing(timing, run)
    request = RunRequest(
        _selection(target, shapes, variants, dtypes, kernels, params, ops, timing),
        _placement(devices, timeout_s, cluster, gpu_model),
        _recording(output, db, tag),
        f"cudabench.run({target!r}, shapes={_shape_texts(shapes)!r})",
        tuned=tuned,
        ceilings=ceilings,
    )
    done = run_benchmarks(request)
    if done.history_error:
        raise HistoryError(done.history_error)
    return rows_frame(done.rows)


def tune(
    target: str,
    shapes: Iterable[ShapeLike] | ShapeLike | None = None,
    variants: Iterable[str] | str | None = None,
    dtypes: Iterable[str | DType] | str | DType | None = None,
    params: Mapping[str, Iterable[int]] | None = None,
    strategy: str = "auto",
    budget: int = 200,
    seed: int = 0,
    save: bool = True,
    kernels: Iterable[str | Path] | str | Path | None = None,
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
    `measured`, `strategy`, the `results` file holding every configuration and `saved` (the
    tuning file it went to, '' when not saved). `params` narrows the space:
    {"BLOCK": [128, 256]}."""
    import pandas as pd

    _check_timing(timing, tune)
    request = TuneRequest(
        _selection(target, shapes, variants, dtypes, kernels, params, ops, timing),
        strategy=strategy,
        budget=budget,
        seed=seed,
        save=save,
        placement=_placement(devices, timeout_s, cluster, gpu_model),
        recording=_recording(output, db, tag),
        command=f"cudabench.tune({target!r}, shapes={_shape_texts(shapes)!r})",
    )
    tuned = tune_params(request)
    results = str(tuned.run.json_path.resolve())
    found = []
    for outcome, saved in zip(tuned.outcomes, tuned.saved):
        best = outcome.best
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
                "results": results,
                "saved": str(saved.path) if saved is not None and saved.path else "",
            }
        )
    if tuned.run.history_error:
        raise HistoryError(tuned.run.history_error)
    unsaved = next((s.error for s in tuned.saved if s is not None and s.error), "")
    if unsaved:
        raise UsageError(unsaved)
    return pd.DataFrame(found)


def profile(
    target: str,
    shapes: Iterable[ShapeLike] | ShapeLike | None = None,
    variants: Iterable[str] | str | None = None,
    dtypes: Iterable[str | DType] | str | DType | None = None,
    params: Mapping[str, Iterable[int]] | None = None,
    kernels: Iterable[str | Path] | str | Path | None = None,
    ops: Iterable[str | Path] | str | Path | None = None,
    *,
    device: int = 0,
    cold: bool = True,
    timed: bool = True,
    warmup: int = 1,
    ncu: str | None = None,
    section_set: str | None = None,
    sections: Iterable[str] = (),
    metrics: Iterable[str] = (),
    output: str | Path | None = None,
    force: bool = False,
    tag: str = "",
    db: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    timer: str | None = None,
) -> pd.DataFrame:
    """`cudabench profile` without the terminal: the cases under Nsight Compute, one launch
    each (`cold`: caches flushed before each kernel), ncu's metrics joined to the rows, and
    (`timed`) cudabench's own time beside them. Returns the rows as a DataFrame (the results
    CSV's columns, ncu_* among them); `attrs["ncu_report"]` and `attrs["results"]` name the
    report and the results file. `ncu`: the executable (default on PATH or in the CUDA
    toolkit); `section_set`, `sections`, `metrics`: what ncu collects besides cudabench's
    metrics. ncu missing: UsageError; ncu refusing or profiling nothing: `Failed`, its
    `details` ncu's own lines."""
    profiling = Profiling(
        _selection(target, shapes, variants, dtypes, kernels, params, ops, {"timer": timer}),
        device=device,
        timeout_s=timeout_s,
        recording=_recording(output, db, tag, force),
        ncu=ncu,
        section_set=section_set,
        sections=tuple(sections),
        metrics=tuple(metrics),
        cold=cold,
        time_it=timed,
        warmup=warmup,
        command=f"cudabench.profile({target!r}, shapes={_shape_texts(shapes)!r})",
    )
    done = profile_cases(profiling)
    if done.history_error:
        raise HistoryError(done.history_error)
    frame = rows_frame(done.rows)
    frame.attrs.update(ncu_report=str(done.report), results=str(done.json_path))
    return frame


def ceilings(
    device: int = 0,
    recalibrate: bool = False,
    size: int | None = None,
    output: str | Path | None = None,
    force: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    **timing: Any,
) -> Ceilings:
    """`cudabench ceilings` without the terminal: this GPU's ceilings (each traffic mix's
    GB/s and its spread, the fp32 FMA rate), the kept ones for this GPU model, driver and
    memory clock, or measured now when there are none, they are stale, `recalibrate` or a
    `size` (float32 elements per array) is given. `timing`: min_samples, min_time_s,
    max_time_s, warmup. A mix without a correct row raises `Failed`."""
    _check_timing(timing, ceilings)
    request = CeilingsRequest(
        device=device,
        timeout_s=timeout_s,
        recalibrate=recalibrate,
        size=size,
        timing=timing,
        output=Path(output) if output else None,
        force=force,
        command=f"cudabench.ceilings(device={device})",
    )
    return measure_ceilings(request).entry


def compare(
    a: str | Path | None = None,
    b: str | Path | None = None,
    *,
    against: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    allow_mismatch: bool = False,
    allow_mixed_timers: bool = False,
    allow_missing: bool = False,
    db: str | Path | None = None,
) -> Comparison:
    """`cudabench compare` without the terminal: run B judged against run A, row by row
    (results files or folders; default results/'s newest run and the run before it of the
    same kind), or with `against` against a run of the history database (a tag, `last`,
    `last~N`, a run id). Returns the Comparison: `pairs` (each row pair's `verdict`, `change`,
    `noise`), `counts`, `mismatch_lines`, and `gate`, the CI gate's verdict: `reasons` it
    fails, `unjudged` rows, `exit_status` (0 pass, 1 fail, 3 no verdict), as
    `cudabench compare --fail-on-regression` exits."""
    request = CompareRequest(
        Path(a) if a else None,
        Path(b) if b else None,
        against,
        Path(db) if db else None,
        threshold,
        allow_mismatch=allow_mismatch,
        allow_mixed_timers=allow_mixed_timers,
        allow_missing=allow_missing,
    )
    return compare_runs(request)


def history(
    op: str,
    variant: str | None = None,
    shape: ShapeLike | None = None,
    dtype: str | DType | None = None,
    gpu: str | None = None,
    last: int = 20,
    threshold: float = DEFAULT_THRESHOLD,
    allow_mismatch: bool = False,
    db: str | Path | None = None,
) -> pd.DataFrame:
    """`cudabench history` without the terminal: one case's rows (or every case of `op` the
    filters leave) across the runs of the history database, oldest first, each marked
    against the case's previous correct, timed row as compare judges it. Returns a DataFrame,
    a row per (case, run): the case (op, variant, shape, dtype, params), the run (run,
    started, git_sha, git_dirty, gpu, tag), the row (status, time_us, spread), and the mark:
    `verdict` (FASTER, SLOWER, SAME, UNSURE, NOT_COMPARABLE, a status such as FAIL, or ''
    for the first), `change` (the median's change) and `mismatch` (the differing fingerprint
    keys)."""
    import pandas as pd

    query = HistoryQuery(
        op,
        variant,
        None if shape is None else _shape(shape),
        dtype.name if isinstance(dtype, DType) else dtype,
        gpu,
        last,
        threshold,
        allow_mismatch,
        Path(db) if db else None,
    )
    found = case_history(query)
    records = [
        {
            "op": case.key.op,
            "variant": case.key.variant,
            "shape": case.key.shape,
            "dtype": case.key.dtype,
            "params": case.key.params,
            "run": entry.run.id,
            "started": entry.run.started,
            "git_sha": entry.run.git_sha,
            "git_dirty": entry.run.git_dirty,
            "gpu": entry.run.gpu,
            "tag": entry.run.tag,
            "status": entry.row.status.value,
            "time_us": entry.row.time_us,
            "spread": entry.row.spread,
            "verdict": entry.verdict,
            "change": entry.change,
            "mismatch": entry.mismatch,
        }
        for case in found.series
        for entry in case.entries
    ]
    return pd.DataFrame.from_records(records)


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
        params={name: tuple(int(v) for v in values) for name, values in (params or {}).items()},
        kernels=tuple(Path(k) for k in _names(kernels) or []),
        ops=tuple(Path(o) for o in _names(ops) or []),
        budget_s=budget_s,
        examples=examples,
        seed=seed,
        placement=_placement(devices, timeout_s, None, None),
        recording=_recording(output, db, tag),
        command=f"cudabench.verify({target!r})",
    )
    outcome = usecase.verify(request)
    if outcome.history_error:
        raise HistoryError(outcome.history_error)
    return pd.DataFrame([usecase.as_record(v, outcome.json) for v in outcome.verdicts])
