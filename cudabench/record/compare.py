"""A/B comparison of two runs, and the speedup matrix inside one run. Pure logic: no printing.

Rows are matched by their key (spec.RowKey: op, variant, shape, dtype). For a matched pair the
verdict comes from the samples, as nvbench's compare does, not from a fixed percentage alone:

    change = median_B / median_A - 1
    se     = sqrt(se_A^2 + se_B^2), se_X = 1.2533 * 1.4826 * MAD_X / median_X / sqrt(n_X)
             (the relative standard error of each median, from the robust spread of its samples)
    SAME    if |change| <= threshold                (too small to be worth a verdict)
    FASTER  if change < 0 and |change| > 3 se       (B takes less time)
    SLOWER  if change > 0 and |change| > 3 se
    UNSURE  otherwise: larger than the threshold, but within the noise

A status change (e.g. OK -> FAIL) is its own verdict and sorts first.

A timed pair gets none of the four when the runs' fingerprints (fingerprint.py: GPU, driver,
CUDA, nvcc, power limit, ECC, MIG, clock policy, fill, timer, L2 flush, compile flags,
cudabench version), or the two rows' clocks, differ: NOT_COMPARABLE, naming the keys, unless
the caller allows those keys (`--allow-mismatch`), and then the verdict is marked. A status
change is still judged: correctness does not depend on the machine being the same.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from cudabench.core.errors import ResultsError
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status, command_kind
from cudabench.record.fingerprint import Difference, blocking, differences, fingerprint, pair_differences
from cudabench.record.results import case_labels, fastest_per_shape, read_results
from cudabench.record.stems import RESULTS_DIR

T = TypeVar("T")

DEFAULT_THRESHOLD = 0.02
NOISE_SIGMAS = 3.0


class Verdict(str, enum.Enum):
    FASTER = "FASTER"
    SLOWER = "SLOWER"
    SAME = "SAME"
    UNSURE = "UNSURE"
    STATUS = "STATUS"  # the status changed (OK -> FAIL, COMPILE_ERROR -> OK, ...)
    # the fingerprints differ (another driver, power limit, clock, ...: Pair.mismatch says
    # which), or the rows were timed by different clocks: no verdict unless allowed
    NOT_COMPARABLE = "NOT_COMPARABLE"
    ONLY_A = "ONLY_A"  # the row is in run A only
    ONLY_B = "ONLY_B"


class CompareError(ValueError):
    """A comparison that cannot be made (no such variant for --by variant); one line, exit 2."""


@dataclass(frozen=True)
class Pair:
    key: RowKey
    a: ResultRow | None
    b: ResultRow | None
    verdict: Verdict
    change: float | None = None  # median_B / median_A - 1
    noise: float | None = None  # 3 x the standard error of the change
    # where the fingerprints (or the rows' clocks) differ: NOT_COMPARABLE's reason, or, for a
    # verdict given anyway (allowed), what its mark (*) stands for
    mismatch: tuple[Difference, ...] = ()

    @property
    def marked(self) -> bool:
        """A verdict given across differing fingerprints (--allow-mismatch)."""
        return bool(self.mismatch) and self.verdict is not Verdict.NOT_COMPARABLE

    @property
    def ratio(self) -> float | None:
        """A's time over B's: above 1, B is faster."""
        return None if self.change is None else 1.0 / (1.0 + self.change)

    @property
    def regressed(self) -> bool:
        """SLOWER, or correct in A and failing in B."""
        newly_failing = (
            self.verdict is Verdict.STATUS
            and self.a is not None
            and self.b is not None
            and not self.a.status.is_failure
            and self.b.status.is_failure
        )
        return self.verdict is Verdict.SLOWER or newly_failing


def relative_standard_error(samples: tuple[float, ...]) -> float:
    """Relative standard error of the median of `samples`, from their MAD (0 for < 2)."""
    if len(samples) < 2:
        return 0.0
    median = statistics.median(samples)
    if median <= 0:
        return 0.0
    mad = statistics.median(abs(s - median) for s in samples)
    return 1.2533 * 1.4826 * mad / median / math.sqrt(len(samples))


def verdict_for(
    a: ResultRow,
    b: ResultRow,
    threshold: float = DEFAULT_THRESHOLD,
    mismatch: tuple[Difference, ...] | list[Difference] = (),
    allow: Collection[str] = (),
) -> Pair:
    """The verdict for one matched pair of rows. `mismatch`: where the two runs'
    fingerprints differ (fingerprint.differences); with the rows' own clocks, any key that
    `allow` (key names, or fingerprint.ALL) does not name makes the pair NOT_COMPARABLE.
    CUDA events bracket launch gaps that CUPTI's kernel records leave out (+32% on a cold
    2^20 sum): a change of clock is not a change of the kernel, nor is one of driver.

    The noise a change must clear is the larger of three standard errors of the two medians
    and the wider of the two rows' spreads ((p90 - p10) / median). The standard error alone
    assumes the samples come from one narrow distribution; a wide or bimodal row moves
    between runs by far more (torch's loop-timed sum of 2^24 floats on an H100: samples from
    58 to 417 us), and nvbench's compare likewise asks a change to clear the samples' own
    width. A host-bound row can still flip between its modes (medians 64 and 118 us in two
    runs of the same code): the CI gates judge kernel rows only (cli/compare_cmd.py,
    gate_failures)."""
    key = a.key
    if a.status is not b.status:
        return Pair(key, a, b, Verdict.STATUS)
    if not (a.time_us and b.time_us):
        return Pair(key, a, b, Verdict.SAME)  # both failed alike, or neither was timed
    change = b.time_us / a.time_us - 1.0
    diffs = pair_differences(tuple(mismatch), a, b)
    if blocking(diffs, allow):
        return Pair(key, a, b, Verdict.NOT_COMPARABLE, change, mismatch=diffs)
    se = math.hypot(relative_standard_error(a.samples_us), relative_standard_error(b.samples_us))
    noise = max(NOISE_SIGMAS * se, a.spread or 0.0, b.spread or 0.0)
    if abs(change) <= threshold:
        verdict = Verdict.SAME
    elif abs(change) > noise:
        verdict = Verdict.FASTER if change < 0 else Verdict.SLOWER
    else:
        verdict = Verdict.UNSURE
    return Pair(key, a, b, verdict, change, noise, diffs)


_ORDER = {
    Verdict.STATUS: 0,
    Verdict.SLOWER: 1,
    Verdict.FASTER: 2,
    Verdict.NOT_COMPARABLE: 3,
    Verdict.UNSURE: 4,
    Verdict.SAME: 5,
    Verdict.ONLY_A: 6,
    Verdict.ONLY_B: 7,
}


def compare_rows(
    rows_a: list[ResultRow],
    rows_b: list[ResultRow],
    threshold: float = DEFAULT_THRESHOLD,
    mismatch: tuple[Difference, ...] | list[Difference] = (),
    allow: Collection[str] = (),
) -> list[Pair]:
    """Match rows by key; status changes first, then regressions, then the rest, each in
    run A's order; unmatched rows are kept, not dropped. `mismatch` and `allow` as for
    verdict_for (run_differences gives the runs' `mismatch`). A row without parameters (a file
    from before its variant had a tunable space) matches the other run's only configuration
    of that variant and case, if it has exactly one."""
    rows_a, rows_b = _bridge_params(rows_a, rows_b)
    by_b = {r.key: r for r in rows_b}
    keys_a = {r.key for r in rows_a}
    pairs = [
        verdict_for(a, by_b[a.key], threshold, mismatch, allow)
        if a.key in by_b
        else Pair(a.key, a, None, Verdict.ONLY_A)
        for a in rows_a
    ]
    pairs += [Pair(b.key, None, b, Verdict.ONLY_B) for b in rows_b if b.key not in keys_a]
    return sorted(pairs, key=lambda p: _ORDER[p.verdict])  # stable: keeps run order within


def _bridge_params(
    rows_a: list[ResultRow], rows_b: list[ResultRow]
) -> tuple[list[ResultRow], list[ResultRow]]:
    """Give a parameterless row the params of the one row on the other side that has the
    same (op, variant, shape, dtype) and some params; other rows as they are."""

    def case(row: ResultRow) -> tuple[str, str, str, str]:
        return (row.op, row.variant, row.shape, row.dtype)

    def bridged(rows: list[ResultRow], other: list[ResultRow]) -> list[ResultRow]:
        configured: dict[tuple[str, str, str, str], list[ResultRow]] = {}
        for row in other:
            if row.params:
                configured.setdefault(case(row), []).append(row)
        out = []
        for row in rows:
            found = configured.get(case(row), [])
            if not row.params and len(found) == 1:
                row = dataclasses.replace(row, params=found[0].params)
            out.append(row)
        return out

    return bridged(rows_a, rows_b), bridged(rows_b, rows_a)


def run_differences(meta_a: RunMeta, meta_b: RunMeta) -> list[Difference]:
    """Where two runs' fingerprints differ (another GPU or L2 mode among them): their rows
    get no verdict unless allowed. Unknown values are no difference (fingerprint.py)."""
    return differences(fingerprint(meta_a), fingerprint(meta_b))


@dataclass(frozen=True)
class RunFile:
    """A results file in a folder, as its own metadata describes it (never its name)."""

    path: Path
    started: str  # meta.started, ISO 8601 UTC
    command: str  # meta.command
    ops: frozenset[str]  # the ops of its rows

    @property
    def kind(self) -> str:
        """The command that made it (core/records.py's command_kind)."""
        return command_kind(self.command)

    @property
    def order(self) -> tuple[str, bool, float]:
        """Newest last: by start; a run and the ceilings measured first as its part share
        their start, and the run itself counts as the newer."""
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            mtime = 0.0
        return (self.started, self.kind != "ceilings", mtime)

    def describe(self) -> str:
        return f"{self.path} ({self.kind} of {', '.join(sorted(self.ops)) or 'no rows'}, {self.started})"


def run_file(path: Path) -> RunFile | None:
    """The file's metadata summary, or None when it is not a cudabench results file (the
    ceilings and tuning files, a foreign JSON, a damaged file)."""
    try:
        doc = json.loads(path.read_text())
        meta, rows = doc["meta"], doc["rows"]
        started, command = meta["started"], meta["command"]
        if not (isinstance(started, str) and isinstance(command, str) and isinstance(rows, list)):
            return None
        ops = frozenset(r["op"] for r in rows if isinstance(r, dict) and isinstance(r.get("op"), str))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError):
        return None
    return RunFile(path, started, command, ops)


def run_files(folder: Path) -> list[RunFile]:
    """The cudabench results files in `folder`, oldest first by their own metadata."""
    found = [run_file(p) for p in folder.glob("*.json") if p.is_file()]
    return sorted((f for f in found if f is not None), key=lambda f: f.order)


def _folder(path: Path | None) -> Path:
    folder = path if path is not None else RESULTS_DIR
    if not folder.is_dir():
        raise ResultsError(f"{folder}: no such results file or folder")
    return folder


def find_run(path: Path | None, index: int = -1) -> Path:
    """A results file from a path: a .json/.csv file, or the newest run in a folder (by the
    files' metadata: their start time; files that are not runs, such as ceilings.json and
    tuning.json, are not candidates)."""
    if path is not None and path.is_file():
        return path
    folder = _folder(path)
    runs = run_files(folder)
    if not runs or len(runs) < -index:
        raise ResultsError(f"{folder}: not enough cudabench results files (found {len(runs)})")
    return runs[index].path


def judged(runs: Sequence[T], kind: Callable[[T], str]) -> T:
    """The run compare judges by default among `runs` (oldest first): the newest that is
    not a verify pass or a `cudabench verify` (their rows are checks, not timings), or the
    newest of all when every one is."""
    return next((r for r in reversed(runs) if kind(r) != "verify"), runs[-1])


def runs_like(
    kind: str, ops: frozenset[str], earlier: Sequence[T], of: Callable[[T], tuple[str, frozenset[str]]]
) -> list[T]:
    """The runs among `earlier` (in their order) that one of `kind` over `ops` is compared
    with: the same kind (`of` gives a run's kind and ops) and the same ops if any has them,
    else the same kind and some op in common. compare's default A and `--against last`."""
    same = [r for r in earlier if of(r)[0] == kind]
    return [r for r in same if of(r)[1] == ops] or [r for r in same if of(r)[1] & ops]


def find_pair(folder: Path | None = None) -> tuple[Path, Path]:
    """compare's default (A, B): B the newest run in the folder (`judged`: not a verify
    pass), A the newest earlier run like it (`runs_like`). ResultsError when there is no
    such pair."""
    folder = _folder(folder)
    runs = run_files(folder)
    if not runs:
        raise ResultsError(f"{folder}: not enough cudabench results files (found 0)")
    newest = judged(runs, lambda r: r.kind)
    earlier = runs[: runs.index(newest)]
    chosen = runs_like(newest.kind, newest.ops, earlier, lambda r: (r.kind, r.ops))
    if not chosen:
        raise ResultsError(
            f"{folder}: no earlier run like the newest, {newest.describe()}, to "
            "compare it with; name the two files (compare A.json B.json)"
        )
    return chosen[-1].path, newest.path


def load(path: Path) -> tuple[RunMeta, list[ResultRow]]:
    return read_results(find_run(path))


@dataclass(frozen=True)
class Matrix:
    """Speedups inside one run: shapes x variants, each time_against / time_variant."""

    shapes: list[str]
    variants: list[str]
    speedup: dict[tuple[str, str], float]  # (shape, variant) -> speedup
    against: str
    best: set[tuple[str, str]]  # (shape, variant) of the fastest correct variant


def speedup_matrix(rows: list[ResultRow], against: str | None = None) -> Matrix:
    """The seeds' naive -> shared -> shuffle -> float4 story at a glance: every variant's
    speedup over `against` (default: the run's baseline row) at each shape."""
    names = list(dict.fromkeys(r.label for r in rows))
    baseline = against or next((r.variant for r in rows if r.is_baseline), None)
    by_name = {r.variant: r.label for r in rows}
    if baseline not in names and baseline in by_name:  # `float4` for `float4[BLOCK=256]`
        baseline = by_name[baseline]
    if baseline is None or baseline not in names:
        raise CompareError(f"no row named {baseline!r} to compare against (variants: {', '.join(names)})")
    labels = case_labels(rows)  # the shape, and the dtype if there are several
    shapes = list(dict.fromkeys(labels))
    times = {
        (label, r.label): r.time_us for r, label in zip(rows, labels) if r.status is Status.OK and r.time_us
    }
    speedup = {
        (shape, name): times[(shape, baseline)] / times[(shape, name)]
        for shape in shapes
        for name in names
        if (shape, baseline) in times and (shape, name) in times
    }
    fastest = fastest_per_shape(rows)
    best = {(label, r.label) for r, label in zip(rows, labels) if r.key in fastest}
    return Matrix(shapes, names, speedup, baseline, best)
