"""The API's runs of kernels: `run`, `tune`, `profile` and `verify`, each `cudabench <command>`
without the terminal (the same use case, nothing printed), returning a DataFrame."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.api.arguments import (
    ShapeLike,
    as_names,
    check_timing,
    placement,
    recording,
    selection,
    shape_texts,
)
from cudabench.core.dtypes import DType
from cudabench.core.errors import UsageError
from cudabench.record.history import HistoryError
from cudabench.record.results import rows_frame
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S
from cudabench.usecases.profile_ncu import Profiling, profile_cases
from cudabench.usecases.run_benchmarks import RunRequest, run_benchmarks
from cudabench.usecases.tune_params import TuneRequest, tune_params

if TYPE_CHECKING:
    import pandas as pd


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
    check_timing(timing, run)
    request = RunRequest(
        selection(target, shapes, variants, dtypes, kernels, params, ops, timing),
        placement(devices, timeout_s, cluster, gpu_model),
        recording(output, db, tag),
        f"cudabench.run({target!r}, shapes={shape_texts(shapes)!r})",
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

    check_timing(timing, tune)
    request = TuneRequest(
        selection(target, shapes, variants, dtypes, kernels, params, ops, timing),
        strategy=strategy,
        budget=budget,
        seed=seed,
        save=save,
        placement=placement(devices, timeout_s, cluster, gpu_model),
        recording=recording(output, db, tag),
        command=f"cudabench.tune({target!r}, shapes={shape_texts(shapes)!r})",
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
        selection(target, shapes, variants, dtypes, kernels, params, ops, {"timer": timer}),
        device=device,
        timeout_s=timeout_s,
        recording=recording(output, db, tag, force),
        ncu=ncu,
        section_set=section_set,
        sections=tuple(sections),
        metrics=tuple(metrics),
        cold=cold,
        time_it=timed,
        warmup=warmup,
        command=f"cudabench.profile({target!r}, shapes={shape_texts(shapes)!r})",
    )
    done = profile_cases(profiling)
    if done.history_error:
        raise HistoryError(done.history_error)
    frame = rows_frame(done.rows)
    frame.attrs.update(ncu_report=str(done.report), results=str(done.json_path))
    return frame


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
        variants=tuple(as_names(variants) or ()),
        dtypes=tuple(as_names(dtypes) or ()),
        params={name: tuple(int(v) for v in values) for name, values in (params or {}).items()},
        kernels=tuple(Path(k) for k in as_names(kernels) or []),
        ops=tuple(Path(o) for o in as_names(ops) or []),
        budget_s=budget_s,
        examples=examples,
        seed=seed,
        placement=placement(devices, timeout_s, None, None),
        recording=recording(output, db, tag),
        command=f"cudabench.verify({target!r})",
    )
    outcome = usecase.verify(request)
    if outcome.history_error:
        raise HistoryError(outcome.history_error)
    return pd.DataFrame([usecase.as_record(v, outcome.json) for v in outcome.verdicts])
