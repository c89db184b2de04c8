"""Compare: two runs row by row (FASTER / SLOWER / SAME / UNSURE from the samples' noise,
status changes, NOT COMPARABLE across differing fingerprints) and the CI gate's verdict on
them, or one run's speedup matrix. `cudabench compare` and `cudabench.api.compare` are this
call; the statistics are record/compare.py.

The gate (`--fail-on-regression`) as data: `Gate.reasons` (why it fails: a kernel row SLOWER
or newly failing, rows of A missing from B, nothing matched, A and B one run), `Gate.unjudged`
(kernel rows NOT COMPARABLE: they neither fail nor pass it) and `Gate.exit_status`: 0 pass,
1 fail, 3 no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

from cudabench.core.errors import ResultsError, UsageError
from cudabench.core.records import ResultRow, RunMeta, command_kind
from cudabench.record.compare import (
    DEFAULT_THRESHOLD,
    CompareError,
    Matrix,
    Pair,
    Verdict,
    compare_rows,
    find_pair,
    find_run,
    judged,
    load,
    run_differences,
    speedup_matrix,
)
from cudabench.record.fingerprint import ALL, Difference, describe
from cudabench.record.history import History, HistoryError
from cudabench.record.stems import RESULTS_DIR

__all__ = [
    "DEFAULT_THRESHOLD",
    "NO_VERDICT",
    "CompareRequest",
    "Comparison",
    "Gate",
    "Matrix",
    "Pair",
    "Verdict",
    "compare_runs",
    "gate_failures",
    "gate_unjudged",
    "load_run",
    "mismatch_lines",
    "variant_matrix",
]

NO_VERDICT = 3  # the gate's exit status when the runs could not be judged (fingerprints differ)
Run = tuple[RunMeta, list[ResultRow]]


@dataclass(frozen=True)
class CompareRequest:
    """Which runs: `run_a` and `run_b` (results files, or folders: their newest run; default
    B the newest run in results/ and A the run before it of the same kind), or with
    `against` B judged against a run of the history database `db` (a tag, `last`, `last~N`,
    a run id; B is `run_a` or the database's newest run). `threshold`: the smallest change
    worth a verdict; `allow_mismatch` judges across differing fingerprints (marked *),
    `allow_mixed_timers` across clocks only; `allow_missing`: rows of A missing from B do
    not fail the gate."""

    run_a: Path | None = None
    run_b: Path | None = None
    against: str | None = None
    db: Path | None = None
    threshold: float = DEFAULT_THRESHOLD
    allow_mismatch: bool = False
    allow_mixed_timers: bool = False
    allow_missing: bool = False


@dataclass(frozen=True)
class Gate:
    """The CI gate's verdict on a comparison: why it fails (`reasons`: (label, detail)),
    and the line about kernel rows it could not judge (`unjudged`, '' when none)."""

    reasons: list[tuple[str, str]]
    unjudged: str

    @property
    def exit_status(self) -> int:
        """1 fail, 3 no verdict (nothing failed, some kernel row NOT COMPARABLE), 0 pass."""
        if self.reasons:
            return 1
        return NO_VERDICT if self.unjudged else 0

    @property
    def outcome(self) -> str:
        return {0: "pass", 1: "fail", NO_VERDICT: "no verdict"}[self.exit_status]


@dataclass(frozen=True)
class Comparison:
    """Two runs compared: where each came from (`shown_a`, `shown_b`: a path, or the history
    database's run), their metadata, each row pair's verdict, the fingerprint differences,
    and the gate's verdict."""

    shown_a: str
    shown_b: str
    meta_a: RunMeta
    meta_b: RunMeta
    pairs: list[Pair]
    threshold: float
    mismatch: list[Difference]
    same_run: str  # why A and B are one run ('' when they are not)
    gate: Gate
    checks: tuple[str, ...] = ()  # "A", "B": a run of verify's checks (untimed), not a timing

    @property
    def counts(self) -> dict[Verdict, int]:
        """How many pairs got each verdict (those with none left out)."""
        counts = {v: sum(p.verdict is v for p in self.pairs) for v in Verdict}
        return {v: n for v, n in counts.items() if n}

    @property
    def mismatch_lines(self) -> list[str]:
        return mismatch_lines(self.pairs)


def _same_run(path_a: str | Path, path_b: str | Path, a: Run, b: Run) -> str:
    """Why A and B are one run ('' when they are not): the same file (or a run's .csv and
    its .json), or two files with the same metadata and rows (a copy)."""
    if isinstance(path_a, Path) and isinstance(path_b, Path):
        try:
            if path_a.with_suffix(".json").resolve() == path_b.with_suffix(".json").resolve():
                return f"both {path_a.with_suffix('.json')}"
        except OSError:
            pass
    if a == b:
        return f"a copy: the same metadata, started {a[0].started}, and rows"
    return ""


def _from_history(ref: str, run: Path | None, db: Path | None) -> tuple[tuple[str, Run], tuple[str, Run]]:
    """(A, B) for --against: B the given results file or the newest run in the database (not
    a verify pass: compare.judged), A the run `ref` names among the others (`last`: the
    newest like B). Each as (where it came from, (meta, rows))."""
    with History(db, readonly=True).open() as history:
        if run is not None:
            path_b = find_run(run)
            b = load(path_b)
            newest = history.find(b[0])  # the same run's own record, if any
            shown_b = str(path_b)
        else:
            runs = history.runs()
            if not runs:
                raise HistoryError(f"history database {history.path} has no runs yet")
            newest = judged(runs[::-1], lambda r: command_kind(r.command)).id
            b = history.load(newest)
            skipped = " that is not a verify pass" if newest != runs[0].id else ""
            shown_b = f"{history.path} run {newest} (the newest{skipped})"
        like = (command_kind(b[0].command), frozenset(row.op for row in b[1]))
        a_id = history.resolve(ref, exclude=newest, like=like)
        a = history.load(a_id)
        info = next(r for r in history.runs() if r.id == a_id)
        shown_a = f"{history.path} run {a_id}" + (f" [{info.tag}]" if info.tag else "")
    return (shown_a, a), (shown_b, b)


def _runs(request: CompareRequest) -> tuple[tuple[str | Path, Run], tuple[str | Path, Run]]:
    if request.against is not None:
        if request.run_b is not None:
            raise UsageError("--against judges one run (RUN_A, or the newest in the history)")
        return _from_history(request.against, request.run_a, request.db)
    run_a, run_b = request.run_a, request.run_b
    if run_a is None and run_b is None:
        file_a, file_b = find_pair(RESULTS_DIR)
    else:
        file_a = find_run(run_a) if run_a else find_pair(RESULTS_DIR)[0]
        file_b = find_run(run_b) if run_b else find_run(RESULTS_DIR)
    return (file_a, load(file_a)), (file_b, load(file_b))


def compare_runs(request: CompareRequest) -> Comparison:
    """Find and read the two runs, pair their rows and judge each pair, and give the gate's
    verdict. UsageError (one line) for runs that cannot be found or read."""
    try:
        (path_a, (meta_a, rows_a)), (path_b, (meta_b, rows_b)) = _runs(request)
    except (ResultsError, CompareError, HistoryError) as exc:
        raise UsageError(str(exc)) from None
    same_run = _same_run(path_a, path_b, (meta_a, rows_a), (meta_b, rows_b))
    mismatch = run_differences(meta_a, meta_b)
    allow = {ALL} if request.allow_mismatch else {"timer"} if request.allow_mixed_timers else set()
    pairs = compare_rows(rows_a, rows_b, request.threshold, mismatch, allow)
    reasons = gate_failures(pairs, request.allow_missing)
    if same_run:
        reasons.insert(0, ("same run", "A and B are one run; compare it with another"))
    return Comparison(
        str(path_a),
        str(path_b),
        meta_a,
        meta_b,
        pairs,
        request.threshold,
        mismatch,
        same_run,
        Gate(reasons, gate_unjudged(pairs)),
        tuple(side for side, m in (("A", meta_a), ("B", meta_b)) if command_kind(m.command) == "verify"),
    )


def load_run(run: Path | None = None) -> tuple[Path, RunMeta, list[ResultRow]]:
    """A results file (or a folder's newest run; default results/'s), read: its path,
    metadata and rows. UsageError (one line) when there is none or it does not read."""
    try:
        path = find_run(run) if run else find_run(RESULTS_DIR)
        meta, rows = load(path)
    except ResultsError as exc:
        raise UsageError(str(exc)) from None
    return path, meta, rows


def variant_matrix(run: Path | None = None, against: str | None = None) -> tuple[RunMeta, Matrix]:
    """One run's shape x variant speedup matrix over `against` (default: its baseline)."""
    try:
        meta, rows = load(run or find_run(RESULTS_DIR))
        return meta, speedup_matrix(rows, against)
    except (ResultsError, CompareError) as exc:
        raise UsageError(str(exc)) from None


def gate_failures(pairs: list[Pair], allow_missing: bool) -> list[tuple[str, str]]:
    """Why a --fail-on-regression gate fails: (label, detail) lines, none when it passes. A
    gate that matched nothing, or lost rows of A, has not shown that nothing regressed."""
    reasons = []
    if not any(p.a is not None and p.b is not None for p in pairs):
        reasons.append(
            ("no rows matched", "A and B share no (op, variant, shape, dtype); nothing was compared")
        )
    # a library baseline (cupy, torch) is the yardstick, not the code under test: its time
    # moves with the host (torch's loop-timed 2^24 sum read 64 and 118 us in two runs of the
    # same code, 2026-11-23), and that is shown in the table but fails no gate
    # a pair has a row on at least one side
    regressed = [p for p in pairs if p.regressed and not cast(ResultRow, p.a or p.b).is_baseline]
    if regressed:
        reasons.append(
            ("regression", "; ".join(f"{p.key} {p.verdict.value}{'*' * p.marked}" for p in regressed))
        )
    missing = [p for p in pairs if p.verdict is Verdict.ONLY_A]
    if missing and not allow_missing:
        shown = "; ".join(str(p.key) for p in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        reasons.append(
            ("missing from B", f"{len(missing)} row(s) of A: {shown}{more} (--allow-missing to accept)")
        )
    return reasons


def _reasons(pairs: list[Pair]) -> str:
    """The distinct differences behind the pairs, `driver 580.95 != 575.57; timer ...`."""
    return "; ".join(dict.fromkeys(describe(p.mismatch) for p in pairs))


def mismatch_lines(pairs: list[Pair]) -> list[str]:
    """What the fingerprint rule did: the rows that got no verdict, and the footnote of the
    verdicts marked * (given across differing fingerprints with --allow-mismatch)."""
    lines = []
    unjudged = [p for p in pairs if p.verdict is Verdict.NOT_COMPARABLE]
    if unjudged:
        lines.append(
            f"NOT COMPARABLE: {len(unjudged)} row(s) got no verdict, the runs differ "
            f"in what moves times: {_reasons(unjudged)} (--allow-mismatch to judge "
            "them anyway, marked *)"
        )
    marked = [p for p in pairs if p.marked]
    if marked:
        lines.append(
            f"*: {len(marked)} verdict(s) given although the runs differ: "
            f"{_reasons(marked)} (--allow-mismatch); a change may be the machine's"
        )
    return lines


def gate_unjudged(pairs: list[Pair]) -> str:
    """The gate's own line about kernel rows it could not judge ('' when none): they fail
    nothing and pass nothing. When no kernel row was judged at all, the exit status says
    nothing about regressions, and the line says so."""
    kernel = [p for p in pairs if p.a is not None and p.b is not None and not p.a.is_baseline]
    unjudged = [p for p in kernel if p.verdict is Verdict.NOT_COMPARABLE]
    if not unjudged:
        return ""
    if len(unjudged) == len(kernel):
        return (
            f"no kernel row was judged: all {len(kernel)} are NOT COMPARABLE "
            f"({_reasons(unjudged)}): no verdict (exit 3). Record a new baseline on this "
            "machine, or pass --allow-mismatch"
        )
    return (
        f"{len(unjudged)} of {len(kernel)} kernel rows NOT COMPARABLE ({_reasons(unjudged)}) "
        "were not judged: they neither fail nor pass this gate (exit 3 unless another row fails)"
    )
