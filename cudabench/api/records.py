"""The API's records: `ceilings` (this GPU's measured ceilings), `compare` (the CI gate's
verdict as data) and `history` (a case's runs, regressions marked)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.api.arguments import ShapeLike, as_shape, check_timing
from cudabench.core.dtypes import DType
from cudabench.core.records import Ceilings
from cudabench.usecases.case_history import HistoryQuery, case_history
from cudabench.usecases.compare_runs import DEFAULT_THRESHOLD, CompareRequest, Comparison, compare_runs
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S
from cudabench.usecases.measure_ceilings import CeilingsRequest, measure_ceilings

if TYPE_CHECKING:
    import pandas as pd


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
    check_timing(timing, ceilings)
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
        None if shape is None else as_shape(shape),
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
