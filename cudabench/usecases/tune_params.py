"""Tune: search each variant's launch parameters for its fastest correct configuration, and
save each best one to the tuning file `run` reads. `cudabench tune` and `cudabench.tune` are
this call; the search itself is tuning/search.py, run here in one session."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cudabench.core.records import Case, DeviceInfo, ResultRow
from cudabench.execution.session import Session
from cudabench.execution.sweep import MANY_ROWS_SAVE_S, Sweep
from cudabench.record import tuning_file
from cudabench.tuning.outcome import Costs, Outcome, entry_of
from cudabench.tuning.search import FINAL_TOP, plan_searches, run_searches
from cudabench.tuning.strategies import STRATEGIES, SearchSpace, Strategy, TuneError, make_strategy
from cudabench.usecases.flow import (
    Placement,
    Plan,
    Recording,
    RunRecord,
    Selection,
    in_session,
    planned,
    preflight,
)
from cudabench.usecases.observe import Observer, Silent

__all__ = [
    "FINAL_TOP",
    "STRATEGIES",
    "Costs",
    "Outcome",
    "Saved",
    "SearchSpace",
    "TuneRequest",
    "TuneResult",
    "TuningPlan",
    "plan_tuning",
    "save_tuned",
    "tune_params",
]


@dataclass(frozen=True)
class TuneRequest:
    """A search: what (`selection`; its `params` narrow the spaces), with which strategy
    (auto, exhaustive, random, optuna), how many configurations per search at most
    (`budget`), `seed`; `save`: each best configuration into the tuning file."""

    selection: Selection
    strategy: str = "auto"
    budget: int = 200
    seed: int = 0
    save: bool = True
    placement: Placement = field(default_factory=Placement)
    recording: Recording = field(default_factory=Recording)
    command: str = ""


@dataclass(frozen=True)
class TuningPlan:
    """The searches a request makes, before any GPU: (job index, space) each, and its
    strategy."""

    work: Plan
    searches: list[tuple[int, SearchSpace]]
    strategies: list[Strategy]
    budget: int

    @property
    def spaces(self) -> list[tuple[Case, SearchSpace]]:
        """Each search's case and space (`cudabench tune --space`)."""
        return [(self.work.jobs[index].case, space) for index, space in self.searches]

    @property
    def rows_expected(self) -> int:
        """Rows at most: the budget, the final round (the best few and the default), and the
        baselines, per search."""
        final = FINAL_TOP + 1
        return sum(
            min(self.budget, s.size) + min(final, s.size + 1) + len(self.work.jobs[i].baselines)
            for i, s in self.searches
        )


@dataclass(frozen=True)
class Saved:
    """A best configuration saved to the tuning file `path`, or why it was not (`error`)."""

    path: Path | None
    error: str = ""


@dataclass(frozen=True)
class TuneResult:
    """The searches' run (every configuration's row in its files) and each search's outcome,
    with what became of its best configuration (`saved`, None where nothing was saved: no
    best, or saving off)."""

    run: RunRecord
    outcomes: list[Outcome]
    saved: list[Saved | None]
    label: str

    @property
    def exit_status(self) -> int:
        """2 the history database failed, 1 a search found no correct configuration, 0."""
        if self.run.history_error:
            return 2
        return 1 if any(o.best is None for o in self.outcomes) else 0


def plan_tuning(request: TuneRequest, observer: Observer | None = None) -> TuningPlan:
    """The searches (no GPU needed): the plan with the variants unconfigured, a space per
    variant with parameters (or named), a strategy each. TuneError (a UsageError) for an
    unknown strategy, no tunable variant, an empty space."""
    observer = observer or Silent()
    if request.strategy not in STRATEGIES:
        raise TuneError(f"--strategy {request.strategy!r}: not one of {', '.join(STRATEGIES)}")
    work = planned(request.selection, observer, expand=False)
    searches = plan_searches(work.jobs, work.narrowing, named=bool(request.selection.variants))
    walkers = [make_strategy(request.strategy, space, request.budget, request.seed) for _, space in searches]
    return TuningPlan(work, searches, walkers, request.budget)


def save_tuned(outcome: Outcome, gpu: DeviceInfo, results: Path) -> Saved:
    """Save a search's best configuration (it must have one) for this GPU model to the
    tuning file, `results` the file holding every configuration's row."""
    try:
        return Saved(tuning_file.save(entry_of(outcome, gpu.name, str(results.resolve()))))
    except tuning_file.TuningError as exc:
        return Saved(None, str(exc))


def tune_params(request: TuneRequest, observer: Observer | None = None) -> TuneResult:
    """Plan the searches, run them in one session (one results file), then save each best
    configuration when asked. A typo, then a missing NVIDIA driver, is said first, before
    planning (flow.preflight; the `--space` listing, plan_tuning alone, needs no driver)."""
    observer = observer or Silent()
    preflight(request.selection, request.placement.where)
    tuning = plan_tuning(request, observer)
    work = tuning.work
    label = f"tune_{work.op_label}"

    def body(prepared: Plan, sweep: Sweep, session: Session) -> tuple[list[Outcome], list[ResultRow]]:
        sweep.save_every_s = MANY_ROWS_SAVE_S  # a row every few ms: the files' rewrite would cost more
        outcomes = run_searches(
            prepared.jobs,
            tuning.searches,
            tuning.strategies,
            request.budget,
            prepared.timing,
            sweep,
            session.compile_arch,
        )
        return outcomes, [r for o in outcomes for r in o.rows]

    command = request.command or f"cudabench.tune({request.selection.target!r})"
    done, outcomes = in_session(
        work,
        request.placement.where,
        command,
        request.recording,
        observer,
        body,
        label=label,
        tuned=False,
        total=tuning.rows_expected,
    )
    saved = [
        save_tuned(o, done.info, done.json_path) if request.save and o.best is not None else None
        for o in outcomes
    ]
    return TuneResult(done, outcomes, saved, label)
