"""Run: validate and time an op's variants (or a config file's benchmarks) over shapes and
dtypes, with the library baselines; the rows in the results files and the history database.
`cudabench run` and `cudabench.run` are this call."""

from __future__ import annotations

from dataclasses import dataclass, field

from cudabench.usecases.flow import Placement, Recording, RunRecord, Selection, in_session, planned, run_all
from cudabench.usecases.observe import Observer, Silent

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


def run_benchmarks(request: RunRequest, observer: Observer | None = None) -> RunRecord:
    """Plan, then run every job in one session (flow.in_session); returns the finished run.
    SweepError (a UsageError) for bad usage, before anything runs."""
    observer = observer or Silent()
    work = planned(request.selection, observer)
    command = request.command or f"cudabench.run({request.selection.target!r})"
    done, _ = in_session(
        work,
        request.placement.where,
        command,
        request.recording,
        observer,
        run_all,
        tuned=request.tuned,
        ceilings=request.ceilings,
        recalibrate=request.recalibrate,
    )
    return done
