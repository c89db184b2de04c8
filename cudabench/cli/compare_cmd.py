"""`cudabench compare`: A/B verdicts between two runs and the CI gate, or the speedup matrix
inside one (the compare use case, usecases/compare_runs.py, judges; this renders)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from cudabench.cli.common import DbOption, err, fail_usage, out
from cudabench.present.compare_tables import compare_table, matrix_table
from cudabench.usecases.compare_runs import DEFAULT_THRESHOLD, CompareRequest, compare_runs, variant_matrix


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
            "metadata; ceilings.json and tuning.json are not runs; a verify pass's checks "
            "are not timings, so it is passed over)."
        ),
    ] = None,
    threshold: Annotated[
        str, typer.Option(help="Smallest change worth a verdict (e.g. 2% or 0.02).")
    ] = f"{100 * DEFAULT_THRESHOLD:g}%",
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            help="Exit 1 if any kernel row is SLOWER or newly failing (library baselines are "
            "shown, not gated), if a row of A is missing from B, if no row matched at all, or if "
            "A and B are one run (a gate that compared a run with itself judged nothing); for CI "
            "gates. NOT COMPARABLE rows neither fail nor pass it: without a failure, "
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
            "against: a tag (its newest run), `last` (the newest other run of the same command "
            "and ops), `last~N` (N before it), or a run id. "
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
    a row of A is missing from B (unless --allow-missing), no row matched at all, or A and B
    are one run (a gate that judged nothing does not pass); 3 with
    --fail-on-regression when nothing failed but some kernel row is NOT COMPARABLE (the gate
    neither passes nor fails on a changed machine); 2 for bad usage or files that cannot be
    read."""
    if fail_above is not None:
        value, fail_on_regression = parse_threshold(fail_above, "--fail-above"), True
    else:
        value = parse_threshold(threshold)
    if by is not None:
        if by != "variant":
            fail_usage(f"--by {by!r}: only 'variant' is supported")
        if run_b is not None:
            fail_usage("--by variant takes one run")
        meta, matrix = variant_matrix(run_a, against)
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
    request = CompareRequest(
        run_a,
        run_b,
        against,
        db,
        value,
        allow_mismatch=allow_mismatch or ignore_device,
        allow_mixed_timers=allow_mixed_timers,
        allow_missing=allow_missing,
    )
    found = compare_runs(request)
    pairs = found.pairs
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
        err.print(f"A: {found.shown_a}\nB: {found.shown_b}", soft_wrap=True, markup=False)
        out.print(compare_table(pairs, found.meta_a, found.meta_b, value, found.mismatch))
    err.print(", ".join(f"{n} {v.value}" for v, n in found.counts.items()), markup=False)
    for line in found.mismatch_lines:
        err.print(Text(line, style="yellow"), soft_wrap=True)
    if found.checks:
        sides = " and ".join(found.checks)
        err.print(
            f"note: {sides} {'is' if len(found.checks) == 1 else 'are'} verify's checks (untimed): "
            "compare judges timings; `cudabench verify` gives their verdicts",
            soft_wrap=True,
            markup=False,
        )
    if found.same_run:
        err.print(
            f"note: A and B are the same run ({found.same_run}): a run compared with itself shows nothing",
            soft_wrap=True,
            markup=False,
        )
    if fail_on_regression:
        gate = found.gate
        if gate.unjudged:
            err.print(Text.assemble(("gate:", "bold yellow"), " ", gate.unjudged), soft_wrap=True)
        for label, detail in gate.reasons:
            err.print(Text.assemble((f"{label}:", "bold red"), " ", detail), soft_wrap=True)
        if gate.exit_status:  # 3: neither pass nor fail, the machine changed under these rows
            raise typer.Exit(gate.exit_status)
