"""Where a run's results files go, and that no other run writes them.

A run's files are `<stem>.csv` and `<stem>.json`; the stem is `results/<UTC timestamp>_<op>`
unless `--output` names a folder or a file (`result_stem`). A results file is never replaced
unless asked (`refuse_overwrite`), and a run claims its stem before anything runs
(`claim_stem`: a lock held until it ends), so two runs at once never write one file.
results.py writes and reads the files themselves.
"""

from __future__ import annotations

import atexit
import datetime as dt
import fcntl
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from cudabench.core.errors import ResultsError

RESULTS_DIR = Path("results")


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def umask() -> int:
    """The process's umask (read by setting it, then setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666 & ~umask())
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


def check_writable(stem: Path) -> None:
    """Fail early (ResultsError) if the results folder cannot be created or written."""
    folder = stem.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".cudabench-probe", delete=True)
        probe.close()
    except OSError as exc:
        raise ResultsError(f"cannot write results to {folder}: {exc.strerror}") from exc
