"""`cudabench compare`: A/B verdicts between two runs, or the speedup matrix inside one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any, Optional, cast

import typer
from rich.text import Text

from cudabench.cli.common import DbOption, err, fail_usage, out
from cudabench.core.records import ResultRow
from cudabench.present.tables import compare_table, matrix_table
from cudabench.record.compare import (
    DEFAULT_THRESHOLD,
    CompareError,
    Pair,
    Verdict,
    compare_rows,
    find_pair,
    find_run,
    load,
    run_differences,
    speedup_matrix,
)
from cudabench.record.fingerprint import ALL, describe
from cudabench.record.history import History, HistoryError
from cudabench.record.results import RESULTS_DIR, ResultsError


def parse_threshold(text: str, option: str = "--threshold") -> float:
    """`2%` or `0.02` -> 0.02; a bad value is a usage error naming `option`."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        fail_usage(f"{option} {text!r} is not a fraction like 2% or 0.02")
    if not 0 <= value < 1:
        fail_usage(f"{option} {text!r} must be between 0% and 100%")
    return value


def compare_command(
    run_a: Annotated[
        Optional[Path],
        typer.Argument(
            help="Results file (.json/.csv) or folder (its newest run). Default: the run before "
            "B in results/ of the same kind (same command and ops), by the files' own start "
            "times."
        ),
    ] = None,
    run_b: Annotated[
        Optional[Path],
        typer.Argument(
            help="The run to judge against A. Default: the newest run in results/ (by its "
            "metadata; ceilings.json and tuning.json are not runs)."
        ),
    ] = None,
    threshold: Annotated[
        str, typer.Option(help="Smallest change worth a verdict (e.g. 2% or 0.02).")
    ] = f"{100 * DEFAULT_THRESHOLD:g}%",
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            help="Exit 1 if any kernel row is SLOWER or newly failing (library baselines are "
            "shown, not gated), if a row of A is missing from B, or if no row matched at all "
            "(for CI gates). NOT COMPARABLE rows neither fail nor pass it: without a failure, "
            "the gate exits 3 (no verdict) and a line says how many went unjudged."
        ),
    ] = False,
    allow_missing: Annotated[
        bool,
        typer.Option(
            help="With --fail-on-regression: rows of A missing from B do not fail the gate "
            "(some row must still match)."
        ),
    ] = False,
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            help="Give verdicts between runs whose fingerprints differ (GPU, driver, CUDA, nvcc, "
            "power limit, ECC, MIG, clock policy, fill, timer, L2 flush, compile flags, "
            "cudabench version) or rows timed by different clocks; they are marked * and a "
            "footnote names the keys. By default such rows say NOT COMPARABLE and get "
            "none."
        ),
    ] = False,
    ignore_device: Annotated[
        bool, typer.Option(hidden=True, help="The old name of --allow-mismatch.")
    ] = False,
    by: Annotated[
        Optional[str],
        typer.Option(help="'variant': the shape x variant speedup matrix of ONE run instead of A/B."),
    ] = None,
    against: Annotated[
        Optional[str],
        typer.Option(
            help="A run in the history database to judge the newest run (or RUN_A, a file) "
            "against: a tag (its newest run), `last` (the run before), `last~N`, or a run id. "
            "With --by variant: the variant the speedups are over (default: the baseline)."
        ),
    ] = None,
    allow_mixed_timers: Annotated[
        bool,
        typer.Option(
            hidden=True,
            help="--allow-mismatch for the timer key alone (the clocks: CUDA events "
            "and CUPTI kernel records).",
        ),
    ] = False,
    fail_above: Annotated[
        Optional[str], typer.Option(help="A CI gate: --fail-on-regression with this threshold (e.g. 3%).")
    ] = None,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two runs row by row (FASTER / SLOWER / SAME / UNSURE from the samples' noise,
    status changes first), or with --by variant one run's speedup matrix.

    Rows of runs whose fingerprints differ (another GPU, driver, power limit, clock policy
    and the like: anything that moves times) get NOT COMPARABLE and the differing keys, not
    a verdict, unless --allow-mismatch.

    Exit status: 0, or 1 with --fail-on-regression when a row got slower or started failing,
    a row of A is missing from B (unless --allow-missing) or no row matched at all; 3 with
    --fail-on-regression when nothing failed but some kernel row is NOT COMPARABLE (the gate
    neither passes nor fails on a changed machine); 2 for bad usage or files that cannot be
    read."""
    if fail_above is not None:
        value, fail_on_regression = parse_threshold(fail_above, "--fail-above"), True
    else:
        value = parse_threshold(threshold)
    try:
        if by is not None:
            if by != "variant":
                fail_usage(f"--by {by!r}: only 'variant' is supported")
            if run_b is not None:
                fail_usage("--by variant takes one run")
            meta, rows = load(run_a or find_run(RESULTS_DIR))
            matrix = speedup_matrix(rows, against)
            if as_json:
                out.print_json(
                    json.dumps(
                        {
                            "against": matrix.against,
                            "speedup": [
                                {"shape": s, "variant": v, "speedup": x, "best": (s, v) in matrix.best}
                                for (s, v), x in matrix.speedup.items()
                            ],
                        }
                    )
                )
            else:
                out.print(matrix_table(matrix, meta))
            return
        path_a: str | Path
        path_b: str | Path
        if against is not None:
            if run_b is not None:
                fail_usage("--against judges one run (RUN_A, or the newest in the history)")
            (path_a, (meta_a, rows_a)), (path_b, (meta_b, rows_b)) = _from_history(against, run_a, db)
        else:
            if run_a is None and run_b is None:
                file_a, file_b = find_pair(RESULTS_DIR)
            else:
                file_a = find_run(run_a) if run_a else find_pair(RESULTS_DIR)[0]
                file_b = find_run(run_b) if run_b else find_run(RESULTS_DIR)
            (meta_a, rows_a), (meta_b, rows_b) = load(file_a), load(file_b)
            path_a, path_b = file_a, file_b
    except (ResultsError, CompareError, HistoryError) as exc:
        fail_usage(str(exc))
    same_run = _same_run(path_a, path_b, (meta_a, rows_a), (meta_b, rows_b))
    mismatch = run_differences(meta_a, meta_b)
    allow = {ALL} if allow_mismatch or ignore_device else {"timer"} if allow_mixed_timers else set()
    pairs = compare_rows(rows_a, rows_b, value, mismatch, allow)
    if as_json:
        out.print_json(
            json.dumps(
                [
                    {
                        **dataclasses.asdict(p.key),
                        "a_us": p.a.time_us if p.a else None,
                        "b_us": p.b.time_us if p.b else None,
                        "a_status": p.a.status.value if p.a else None,
                        "b_status": p.b.status.value if p.b else None,
                        "change": p.change,
                        "noise": p.noise,
                        "verdict": p.verdict.value,
                        "mismatch": [{"key": k, "a": a, "b": b} for k, a, b in p.mismatch],
                        "a_ncu": dataclasses.asdict(p.a.ncu) if p.a and p.a.ncu else None,
                        "b_ncu": dataclasses.asdict(p.b.ncu) if p.b and p.b.ncu else None,
                    }
                    for p in pairs
                ]
            )
        )
    else:
        err.print(f"A: {path_a}\nB: {path_b}", soft_wrap=True, markup=False)
        out.print(compare_table(pairs, meta_a, meta_b, value, mismatch))
    counts = {v: sum(p.verdict is v for p in pairs) for v in Verdict}
    err.print(", ".join(f"{n} {v.value}" for v, n in counts.items() if n), markup=False)
    for line in mismatch_lines(pairs):
        err.print(Text(line, style="yellow"), soft_wrap=True)
    if same_run:
        err.print(
            f"note: A and B are the same run ({same_run}): a run compared with itself shows nothing",
            soft_wrap=True,
            markup=False,
        )
    if fail_on_regression:
        unjudged = gate_unjudged(pairs)
        if unjudged:
            err.print(Text.assemble(("gate:", "bold yellow"), " ", unjudged), soft_wrap=True)
        reasons = gate_failures(pairs, allow_missing)
        if same_run:
            reasons.insert(0, ("same run", "A and B are one run; compare it with another"))
        for reason in reasons:
            err.print(Text.assemble((f"{reason[0]}:", "bold red"), " ", reason[1]), soft_wrap=True)
        if reasons:
            raise typer.Exit(1)
        if unjudged:  # neither pass nor fail: the machine changed under these rows
            raise typer.Exit(NO_VERDICT)


def _same_run(path_a: Any, path_b: Any, a: Any, b: Any) -> str:
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


def _from_history(ref: str, run: Path | None, db: Path | None) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """(A, B) for --against: B the given results file or the newest run in the database, A
    the run `ref` names among the others. Each as (where it came from, (meta, rows))."""
    with History(db, readonly=True).open() as history:
        if run is not None:
            path_b = find_run(run)
            b = load(path_b)
            newest = history.find(b[0])  # the same run's own record, if any
            shown_b = str(path_b)
        else:
            runs = history.runs(limit=1)
            if not runs:
                raise HistoryError(f"history database {history.path} has no runs yet")
            newest = runs[0].id
            b = history.load(newest)
            shown_b = f"{history.path} run {newest} (the newest)"
        a_id = history.resolve(ref, exclude=newest)
        a = history.load(a_id)
        info = next(r for r in history.runs() if r.id == a_id)
        shown_a = f"{history.path} run {a_id}" + (f" [{info.tag}]" if info.tag else "")
    return (shown_a, a), (shown_b, b)


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


NO_VERDICT = 3  # the gate's exit status when the runs could not be judged (fingerprints differ)


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
