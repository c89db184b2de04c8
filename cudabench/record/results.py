"""Result rows <-> pandas, run metadata, and atomic result files.

Each run writes `<stem>.csv` (one flat row per (case, variant)) and `<stem>.json`
(`{"meta": {...}, "rows": [...]}`, every figure including the raw samples); stems.py says
where the stem is and claims it for the run. Files are written to a temporary name and
renamed, so a results file is never half written. `read_results` is the one reader.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import tempfile
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cudabench.core.errors import ResultsError
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status
from cudabench.core.timing import ProfileMetrics
from cudabench.core.version import __version__
from cudabench.record.fingerprint import fingerprint
from cudabench.record.schema import SchemaError, read_record
from cudabench.record.stems import stem_file, umask

if TYPE_CHECKING:  # pandas is imported where a frame is made (0.4 s a command's start)
    import pandas as pd

FORMAT_VERSION = 1


def git_sha(folder: Path | None = None) -> str:
    """The commit of the working tree the tool runs from, or '' outside git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=folder or Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def kernels_dirty(folder: Path | None = None) -> bool:
    """Whether the built-in kernels' folder has uncommitted changes (False outside git)."""
    from cudabench.core.paths import BUILTIN_KERNELS

    folder = folder or BUILTIN_KERNELS
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--", str(folder)],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=folder,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and bool(out.stdout.strip())


def row_record(row: ResultRow) -> dict[str, Any]:
    """A row as plain JSON-ready values (the status as its text)."""
    record = dataclasses.asdict(row)
    record["status"] = row.status.value
    return record


NCU_COLUMNS = [f"ncu_{f.name}" for f in dataclasses.fields(ProfileMetrics)]


_CLOCKS = ("sm_mhz", "mem_mhz", "temp_c")  # (before, after) pairs: two CSV columns each
INT_COLUMNS = [name for name, hint in typing.get_type_hints(ResultRow).items() if hint in (int, int | None)]
INT_COLUMNS += [f"{name}_{when}" for name in _CLOCKS for when in ("before", "after")]
INT_COLUMNS += [
    f"ncu_{name}" for name, hint in typing.get_type_hints(ProfileMetrics).items() if hint in (int, int | None)
]


def flat_record(row: ResultRow) -> dict[str, Any]:
    """A CSV record: the raw samples stay in the JSON file only, ncu's metrics become
    `ncu_*` columns, and each clock pair two columns (`sm_mhz_before`, `sm_mhz_after`)."""
    record: dict[str, Any] = {}
    for key, value in row_record(row).items():
        if key in ("samples_us", "ncu"):
            continue
        if key in _CLOCKS:
            record[f"{key}_before"], record[f"{key}_after"] = value or (None, None)
            continue
        record[key] = value
    for name in NCU_COLUMNS:
        value = getattr(row.ncu, name[4:]) if row.ncu else None
        record[name] = (json.dumps(value) if value else None) if isinstance(value, dict) else value
    return record


def csv_columns(with_ncu: bool) -> list[str]:
    """The CSV's columns, in order; the `ncu_*` ones `with_ncu`."""
    columns = []
    for f in dataclasses.fields(ResultRow):
        if f.name in _CLOCKS:
            columns += [f"{f.name}_before", f"{f.name}_after"]
        elif f.name not in ("samples_us", "ncu"):
            columns.append(f.name)
    return columns + (NCU_COLUMNS if with_ncu else [])


def rows_frame(rows: Iterable[ResultRow]) -> pd.DataFrame:
    """One row per ResultRow; the `ncu_*` columns only when some row was profiled."""
    import pandas as pd

    rows = list(rows)
    columns = csv_columns(any(row.ncu for row in rows))
    frame = pd.DataFrame.from_records([flat_record(row) for row in rows], columns=columns)
    # integers stay integers beside missing values (pandas would make 32 into 32.0)
    return frame.astype({c: "Int64" for c in INT_COLUMNS if c in frame.columns})


def meta_dict(meta: RunMeta) -> dict[str, Any]:
    record = dataclasses.asdict(meta)
    record["device"]["dram_peak_gbps"] = meta.device.dram_peak_gbps
    record["format_version"] = FORMAT_VERSION
    record["fingerprint"] = fingerprint(meta)  # for readers; recomputed from the fields on reading
    return record


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600; a results file is as readable as any other the user
        # writes (the umask's say, as the history database's)
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(stem: Path, meta: RunMeta, rows: list[ResultRow]) -> tuple[Path, Path]:
    """Write `<stem>.csv` and `<stem>.json`; returns their paths."""
    csv_path, json_path = stem_file(stem, ".csv"), stem_file(stem, ".json")
    atomic_write(csv_path, rows_frame(rows).to_csv(index=False))
    atomic_write(json_path, json.dumps(results_document(meta, rows), indent=1))
    return csv_path, json_path


def results_document(meta: RunMeta, rows: list[ResultRow]) -> dict[str, Any]:
    return {"meta": meta_dict(meta), "rows": [row_record(row) for row in rows]}


_NON_NEGATIVE = (
    "time_us",
    "min_us",
    "spread",
    "gbps",
    "gflops",
    "pct_peak",
    "speedup",
    "tolerance",
    "floor_us",
)  # a negative or NaN time means nothing
# a FAIL row's worst error is +inf where an output is NaN or infinite against a finite
# reference (ops/protocol.check_output): honest, so it reads back; NaN or negative does not
_NON_NEGATIVE_OR_INF = ("max_abs_err",)


def read_results(path: Path) -> tuple[RunMeta, list[ResultRow]]:
    """Read a `.json` results file back, checked field by field against the records'
    declared types (schema.py). Any problem is one ResultsError naming the file and the
    field. A `.csv` path reads the `.json` written beside it."""
    json_path = path.with_suffix(".json") if path.suffix == ".csv" else path
    shown = path if json_path == path else f"{path} (its {json_path.name})"
    try:
        text = json_path.read_text()
    except FileNotFoundError as exc:
        if path.suffix == ".csv":
            raise ResultsError(
                f"{path}: compare and report read the {json_path.name} written "
                "beside a results CSV (it holds the metadata and samples), and "
                "there is none"
            ) from exc
        raise ResultsError(f"{path}: no such results file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{shown}: cannot read: {exc}") from exc
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ResultsError(f"{shown}: not JSON (truncated or not a results file): {exc}") from exc
    except RecursionError:
        raise ResultsError(f"{shown}: not a cudabench results file (JSON nested too deep to read)") from None
    return parse_document(doc, str(shown))


def parse_document(doc: Any, shown: str) -> tuple[RunMeta, list[ResultRow]]:
    """A parsed results document ({"meta": ..., "rows": [...]}, from a file or the history
    database) checked field by field; ResultsError naming `shown` and the field."""
    try:
        if not isinstance(doc, dict) or "meta" not in doc or "rows" not in doc:
            raise SchemaError("not a cudabench results file (needs 'meta' and 'rows')")
        raw_meta = doc["meta"]
        version = raw_meta.get("format_version") if isinstance(raw_meta, dict) else None
        if version != FORMAT_VERSION:
            raise SchemaError(
                f"meta.format_version: {version!r} is not {FORMAT_VERSION}, the "
                f"format this cudabench {__version__} reads"
            )
        if isinstance(raw_meta.get("device"), dict):
            raw_meta = {
                **raw_meta,
                "device": {k: v for k, v in raw_meta["device"].items() if k != "dram_peak_gbps"},
            }
        meta = read_record(RunMeta, raw_meta, "meta", derived=("format_version", "fingerprint"))
        if not isinstance(doc["rows"], list):
            raise SchemaError("rows: expected a list")
        rows = [_row(raw, f"rows[{i}]") for i, raw in enumerate(doc["rows"])]
    except SchemaError as exc:
        raise ResultsError(f"{shown}: {exc}") from exc
    return meta, rows


def _row(raw: Any, where: str) -> ResultRow:
    row = read_record(ResultRow, raw, where)
    for name in _NON_NEGATIVE:
        value = getattr(row, name)
        if value is not None and not 0 <= value < math.inf:
            raise SchemaError(f"{where}.{name}: {value!r} is not a finite number >= 0")
    for name in _NON_NEGATIVE_OR_INF:
        value = getattr(row, name)
        if value is not None and not 0 <= value <= math.inf:
            raise SchemaError(f"{where}.{name}: {value!r} is not a number >= 0")
    if row.status is Status.OK and row.time_us is None and row.method not in ("ncu", "verify"):
        # every timed OK row has a median; one without would read blank in a report and
        # SAME in compare (`profile`'s rows, method ncu, and `verify`'s, are untimed by design)
        raise SchemaError(f"{where}.time_us: an OK row needs its time (null here)")
    return row


def parse_row(raw: Any, shown: str) -> ResultRow:
    """One row record (the history database's), checked as a results file's rows are."""
    try:
        return _row(raw, "row")
    except SchemaError as exc:
        raise ResultsError(f"{shown}: {exc}") from exc


def case_labels(rows: list[ResultRow]) -> list[str]:
    """Each row's shape, with its dtype when the rows have more than one dtype
    (`442368x128 bfloat16`)."""
    several = len({r.dtype for r in rows}) > 1
    return [f"{r.shape} {r.dtype}" if several else r.shape for r in rows]


def fastest_per_shape(rows: list[ResultRow]) -> set[RowKey]:
    """The keys of the fastest correct non-baseline row of each (op, shape, dtype)."""
    best: dict[tuple[str, str, str], tuple[float, ResultRow]] = {}  # its time, the row
    for row in rows:
        if row.status is Status.OK and row.time_us and not row.is_baseline:
            key = (row.op, row.shape, row.dtype)
            if key not in best or row.time_us < best[key][0]:
                best[key] = (row.time_us, row)
    return {r.key for _, r in best.values()}
