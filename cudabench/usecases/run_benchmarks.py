"""Run: validate and time an op's variants (or a config file's benchmarks) over shapes and
dtypes, with the library baselines; the rows in the results files and the history database.
`cudabench run` and `cudabench.run` are this call."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cudabench.core.shapes import shape_text
from cudabench.execution.plan import Plan
from cudabench.execution.session import Session
from cudabench.usecases.flow import (
    First,
    Placement,
    Recording,
    RunRecord,
    Selection,
    in_session,
    planned,
    run_all,
)
from cudabench.usecases.observe import Observer, Progress, Silent
from cudabench.usecases.verify import verify_pass, without_wrong
from cudabench.verification.search import VariantVerdict

__all__ = ["RunRequest", "run_benchmarks"]


@dataclass(frozen=True)
class RunRequest:
    """A run: what (`selection`), where (`placement`), recorded how (`recording`), the
    command as its metadata names it; `tuned`: each variant at the tuning file's
    configuration for this GPU model; `ceilings`: the `% ceiling` column (measured first when
    none are kept, or with `recalibrate`)."""

    selection: Selection
    placement: Placement = field(default_factory=Placement)
    recording: Recording = field(default_factory=Recording)
    command: str = ""
    tuned: bool = True
    ceilings: bool = True
    recalibrate: bool = False
    verify_budget: float | None = None  # run --verify: seconds a variant, before timing


def _verify_first(
    request: RunRequest, command: str, observer: Observer, verdicts: list[VariantVerdict]
) -> First:
    """The run's first step with --verify: a verify pass (usecases/verify.py's `verify_pass`,
    on the run's own session, its rows on a progress of their own) whose verdicts go into
    `verdicts`; the variants it finds wrong somewhere are said, and the plan returned goes on
    without them (they are not timed)."""

    def first(work: Plan, session: Session, progress: Progress) -> Plan:
        budget = request.verify_budget or 0.0
        selection = request.selection
        found, (csv_path, json_path) = verify_pass(
            session,
            work,
            command,
            budget,
            output=request.recording.output,
            listener=progress,
            ops=selection.ops or (),
            kernels=selection.kernels or (),
            observer=observer,
        )
        verdicts.extend(found)
        files = f"{csv_path.resolve()}  {json_path.resolve()}"
        observer.note(f"verify pass ({budget:g} s a variant's search at most): {files}")
        for v in found:
            if v.verdict.is_wrong:
                wrong = v.verdict.wrong
                where = f"wrong at {shape_text(wrong.shape)}" if wrong is not None else "does not compile"
                observer.note(f"{v.op} {v.label} {v.dtype} {where} (verify pass): not timed")
        return without_wrong(work, found)

    return first


def run_benchmarks(request: RunRequest, observer: Observer | None = None) -> RunRecord:
    """Plan, then run every job in one session (flow.in_session); returns the finished run.
    SweepError (a UsageError) for bad usage, before anything runs."""
    observer = observer or Silent()
    work = planned(request.selection, observer, where=request.placement.where)
    command = request.command or f"cudabench.run({request.selection.target!r})"
    verdicts: list[VariantVerdict] = []
    done, _ = in_session(
        work,
        request.placement.where,
        command,
        request.recording,
        observer,
        run_all,
        first=_verify_first(request, command, observer, verdicts) if request.verify_budget else None,
        tuned=request.tuned,
        ceilings=request.ceilings,
        recalibrate=request.recalibrate,
    )
    if request.verify_budget:
        done = dataclasses.replace(done, verified=tuple(verdicts))
    return done
