"""Result rows <-> pandas, run metadata, and atomic result files.

Each run writes `<stem>.csv` (one flat row per (case, variant)) and `<stem>.json`
(`{"meta": {...}, "rows": [...]}`, every figure including the raw samples), where the stem is
`results/<UTC timestamp>_<op>` unless `--output` names another. Files are written to a
temporary name and renamed, so a results file is never half written. A run claims its stem
first (`claim_stem`: a lock held until it ends), so two runs at once never write one file.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime as dt
import fcntl
import json
import math
import os
import subprocess
import sys
import tempfile
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from cudabench.core.errors import UsageError
from cudabench.core.records import ProfileMetrics, ResultRow, RowKey, RunMeta, Status
from cudabench.core.version import __version__
from cudabench.record.fingerprint import fingerprint
from cudabench.record.schema import SchemaError, read_record

FORMAT_VERSION = 1
RESULTS_DIR = Path("results")


class ResultsError(UsageError):
    """A file that is not a cudabench results file, or a path that cannot be written: the
    user's to fix, so one line and exit 2 wherever it escapes (errors.UsageError)."""


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


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


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


def result_stem(output: Path | None, op_label: str, started: str) -> Path:
    """Where a run's files go: `--output` as a folder, or as a file stem (suffix dropped).
    ResultsError for a path that exists and is neither a folder nor a regular file (a
    device such as /dev/null, a pipe): there is no `<it>.csv` to write beside it."""
    stamp = started.replace("-", "").replace(":", "")[:15]  # 20261121T221924
    name = f"{stamp}_{op_label}"
    if output is None:
        return RESULTS_DIR / name
    if output.exists() and not output.is_dir() and not output.is_file():
        raise ResultsError(
            f"--output {output}: not a folder or a regular file (results are a "
            "<stem>.csv and a <stem>.json; give a folder or a name like run.json)"
        )
    if output.suffix in (".csv", ".json"):
        return output.with_name(output.name[: -len(output.suffix)])
    if output.exists() and not output.is_dir():
        return output
    return output / name


def names_a_file(output: Path | None) -> bool:
    """Whether `--output` names the files themselves (`run.json`, an existing file's stem)
    rather than a folder for default names (result_stem)."""
    return output is not None and (
        output.suffix in (".csv", ".json") or (output.exists() and not output.is_dir())
    )


def stem_file(stem: Path, suffix: str) -> Path:
    """`<stem><suffix>`: the stem's name with the suffix added, never replacing a dot in it
    (`bench_v1.2` -> `bench_v1.2.json`, where `with_suffix` would give `bench_v1.json`)."""
    return stem.with_name(stem.name + suffix)


def is_results_file(path: Path) -> bool:
    """Whether `path` is a cudabench results file: a JSON document with `meta` and `rows`,
    or a CSV whose header is a results CSV's (or that has such a JSON beside it)."""
    try:
        if not path.is_file():
            return False
        if path.suffix == ".csv":
            with path.open(errors="replace") as handle:
                first = handle.readline()
            return first.startswith("op,shape,dtype,variant,status") or (
                path.with_suffix(".json").is_file() and is_results_file(path.with_suffix(".json"))
            )
        with path.open("rb") as handle:
            head = handle.read(4096).decode(errors="replace").lstrip()
        return head.startswith("{") and '"meta"' in head
    except OSError:
        return False


def refuse_overwrite(paths: Iterable[Path], force: bool = False, what: str = "results") -> None:
    """ResultsError (one line naming the file and `--force`) if one of `paths` is an existing
    results file and `force` is off: a run or a report never replaces a results file unless
    asked."""
    if force:
        return
    for path in paths:
        if is_results_file(path):
            raise ResultsError(
                f"{path} is an existing results file; writing the {what} there "
                "would replace it (pass --force to overwrite, or choose another "
                "--output)"
            )


def refuse_overwrite_stem(stem: Path, force: bool = False) -> None:
    """refuse_overwrite for a run's `<stem>.csv` and `<stem>.json`."""
    refuse_overwrite([stem_file(stem, ".json"), stem_file(stem, ".csv")], force)


# ---------------------------------------------------------------- claiming a stem
#
# Two runs started in the same second would both name their files results/<second>_<op>, and
# the sweep rewrites them after every row: one run's rows would replace the other's. So a run
# claims its stem before anything runs: an exclusive lock (flock) on `.<stem>.lock` beside the
# files, held until the run ends (the kernel drops it if the process dies). A default name
# that is taken (claimed by a live run, or its files already there) moves on to `_2`, `_3`;
# an `--output` that another live run holds is refused, naming that run.

_HELD: dict[Path, int] = {}  # this process's claims: lock file -> its descriptor
_MAX_SUFFIX = 1000


def lock_path(stem: Path) -> Path:
    """The lock file of a stem: `.<name>.lock` in the stem's folder."""
    return stem.with_name(f".{stem.name}.lock")


def _try_lock(stem: Path, again: bool) -> bool:
    """Take the stem's lock for this process (True), or False when another process holds
    it. A lock this process already holds is taken `again` (profile claims its stem, then
    its timed run does) or refused. OSError when the folder cannot be written."""
    path = lock_path(stem)
    key = path.absolute()
    if key in _HELD:
        return again
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        try:  # the holder may have ended (and removed the file) between our open and lock
            mine = os.fstat(fd)
            now = os.stat(path)
            current = (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino)
        except FileNotFoundError:
            current = False
        if not current:
            os.close(fd)
            continue
        owner = {"pid": os.getpid(), "command": _command_line(), "since": now_utc()}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(owner).encode())
        _HELD[key] = fd
        return True


def _command_line() -> str:
    """This process's command as a user typed it: `cudabench run ...` (the API: its script)."""
    argv = list(sys.argv) or ["python"]
    if argv[0].endswith(("cudabench", "__main__.py")):
        argv[0] = "cudabench"
    return " ".join(argv)


def _holder(stem: Path) -> str:
    """Who holds a stem's lock, as the lock file says: `pid 123, since <time>: cudabench run ...`."""
    try:
        owner = json.loads(lock_path(stem).read_text())
        command = " ".join(str(owner.get("command", "")).split())
        command = command if len(command) <= 120 else command[:117] + "..."
        return f"pid {owner['pid']}, since {owner.get('since', '?')}" + (f": {command}" if command else "")
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that is starting"


def release_stem(stem: Path) -> None:
    """Give up this process's claim on `stem` (nothing if it holds none): the lock file
    removed, then its lock dropped."""
    key = lock_path(stem).absolute()
    fd = _HELD.pop(key, None)
    if fd is None:
        return
    try:
        key.unlink(missing_ok=True)
    except OSError:
        pass
    finally:
        os.close(fd)


@atexit.register
def _release_all() -> None:
    for key in list(_HELD):
        release_stem(key.with_name(key.name[1 : -len(".lock")]))


def _taken(stem: Path) -> bool:
    return stem_file(stem, ".json").exists() or stem_file(stem, ".csv").exists()


def claim_stem(output: Path | None, op_label: str, started: str, force: bool = False) -> Path:
    """Where this run's files go (result_stem), claimed for this process until it ends or
    calls `release_stem`: concurrent runs never write the same files. A default name
    (`results/<time>_<op>`, or in the folder `--output` names) already claimed by a live
    run or already written becomes `<time>_<op>_2` (`_3`, ...). A file stem `--output`
    names that another live run holds is a ResultsError naming that run; one an earlier
    run wrote is refused unless `force` (refuse_overwrite_stem). ResultsError too when the
    folder cannot be written."""
    stem = result_stem(output, op_label, started)
    check_writable(stem)
    try:
        if names_a_file(output):
            if not _try_lock(stem, again=True):
                raise ResultsError(
                    f"{stem_file(stem, '.json')} is being written by another cudabench run "
                    f"({_holder(stem)}); wait for it or choose another --output"
                )
            try:
                refuse_overwrite_stem(stem, force)
            except ResultsError:
                release_stem(stem)
                raise
            return stem
        for n in range(1, _MAX_SUFFIX):
            candidate = stem if n == 1 else stem.with_name(f"{stem.name}_{n}")
            if not _try_lock(candidate, again=False):
                continue
            if _taken(candidate):
                release_stem(candidate)
                continue
            return candidate
    except OSError as exc:
        raise ResultsError(f"cannot write results to {stem.parent}: {exc.strerror}") from exc
    raise ResultsError(
        f"{stem.parent}: {_MAX_SUFFIX} runs named {stem.name}_<n> already; choose another --output"
    )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600; a results file is as readable as any other the user
        # writes (the umask's say, as the history database's)
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(stem: Path) -> None:
    """Fail early (ResultsError) if the results folder cannot be created or written."""
    folder = stem.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".cudabench-probe", delete=True)
        probe.close()
    except OSError as exc:
        raise ResultsError(f"cannot write results to {folder}: {exc.strerror}") from exc


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
    "max_abs_err",
    "tolerance",
    "floor_us",
)  # a negative or NaN time means nothing


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
