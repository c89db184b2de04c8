"""What the use cases that run kernels share, written once: what to run (`Selection`, typed:
shapes as tuples, launch parameters as int tuples, dtypes as DType records or names), where
(`Placement`: this host's GPUs or a Dask cluster, the one place that choice is made), where
it is recorded (`Recording`), and the session's sequence

    plan -> open -> prepare -> start -> run -> finish            (`planned`, `in_session`)

that run, tune, profile and the process profile runs under ncu all go through. What happens
on the way is told to an `Observer` (observe.py); what came of it is a `RunRecord`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from cudabench import backends
from cudabench.core.dtypes import DType
from cudabench.core.errors import SweepError
from cudabench.core.records import DeviceInfo, ResultRow, RunMeta, Shape
from cudabench.core.timing import TimingOptions
from cudabench.execution.plan import Plan, check_target, checked_timing, job_libraries, plan
from cudabench.execution.pool import DEFAULT_TIMEOUT_S
from cudabench.execution.session import Cluster, InProcess, Local, Session, Where, parse_devices
from cudabench.execution.sweep import Interrupted, Sweep, SweepFailed
from cudabench.usecases.observe import Observer, Progress
from cudabench.verification.search import VariantVerdict

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "Failed",
    "InProcess",
    "Interrupted",
    "Placement",
    "Plan",
    "Recording",
    "RunRecord",
    "Selection",
    "SweepFailed",
    "in_session",
    "parse_devices",
    "planned",
]

T = TypeVar("T")


class Failed(Exception):
    """A use case that ran but could not give its answer (ncu refused to profile, a ceilings
    mix got no correct row): `message`, and `details` (e.g. ncu's own lines). The CLI says
    both and exits 1."""

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message, self.details = message, list(details or [])


@dataclass(frozen=True)
class Selection:
    """What to run: an op name or a config file, narrowed by the rest (None: the config's).
    `params` is a grid of launch parameters ({"BLOCK": (128, 256)}); `timing` changes
    TimingOptions fields (cold, warmup, min_samples, timer, ...; None keeps the config's)."""

    target: str
    shapes: tuple[Shape, ...] | None = None
    variants: tuple[str, ...] | None = None
    dtypes: tuple[str | DType, ...] | None = None
    params: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    kernels: tuple[Path, ...] = ()
    ops: tuple[Path, ...] = ()
    timing: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    """Where the jobs run: this host's GPUs (`devices`, None: all of them), or a Dask
    cluster (`cluster`: a scheduler address or 'local'; `gpu_model` where models differ)."""

    devices: tuple[int, ...] | None = (0,)
    timeout_s: float = DEFAULT_TIMEOUT_S
    cluster: str | None = None
    gpu_model: str | None = None
    executor: Where | None = None  # an executor given outright (tests: InProcess on a fake)

    def __post_init__(self) -> None:
        if self.gpu_model and not self.cluster:
            raise SweepError(
                "--gpu-model picks a GPU model among a cluster's workers: give it with --cluster"
            )

    @property
    def where(self) -> Where:
        """The session's executor for this placement: the local-or-cluster choice, once."""
        if self.executor is not None:
            return self.executor
        if self.cluster:
            return Cluster(self.cluster, self.timeout_s, self.gpu_model)
        return Local(self.devices, self.timeout_s)


@dataclass(frozen=True)
class Recording:
    """Where the run is recorded: `output` (a folder or file stem; default results/), the
    history database `db` (default results/cudabench.db) under `tag`; `force` lets output
    replace an earlier run's files."""

    output: Path | None = None
    db: Path | None = None
    tag: str = ""
    force: bool = False


@dataclass(frozen=True)
class RunRecord:
    """A finished run: the plan as the session prepared it (`work.problems`: kernel files
    that did not load), its rows, metadata and files, the GPU, and what went wrong on the
    way that did not stop it (`history_error`: the database's trouble; '' if none)."""

    work: Plan
    rows: list[ResultRow]
    meta: RunMeta
    stem: Path
    csv_path: Path
    json_path: Path
    info: DeviceInfo
    devices: tuple[int, ...]
    executor_notes: tuple[str, ...]  # what the executor noticed (a cluster's lost workers)
    history_error: str
    # run --verify: the verify pass's verdict on each variant (its wrong ones were not timed)
    verified: tuple[VariantVerdict, ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        """What the run could not do as asked: its metadata's notes, then the executor's."""
        return (*self.meta.notes, *self.executor_notes)

    @property
    def failed(self) -> list[ResultRow]:
        """The kernel rows that failed (FAIL, COMPILE_ERROR, CRASH, TIMEOUT, ERROR). A library
        baseline that fails is the library's result, not the user's kernel: not here."""
        return [r for r in self.rows if r.status.is_failure and not r.is_baseline]

    @property
    def exit_status(self) -> int:
        """What the run means for a script: 2 the history database failed, 1 a kernel row
        failed or a kernel file did not load, 0 otherwise."""
        if self.history_error:
            return 2
        wrong = any(v.verdict.is_wrong for v in self.verified)
        return 1 if self.failed or self.work.problems or wrong else 0


def require_driver(where: Where) -> None:
    """SweepError (one line) where the run is to be on this host's GPUs with the CuPy
    backend and the NVIDIA driver does not load: said before planning, which can take
    a minute for a big config. A cluster's nodes, the fake backend and an opened backend
    are not probed."""
    if isinstance(where, Cluster) or (isinstance(where, InProcess) and where.backend is not None):
        return
    if backends.backend_name() == "cupy" and not backends.driver_present():
        raise SweepError(backends.NO_DRIVER)


def preflight(selection: Selection, where: Where | None = None) -> None:
    """What is said before any planning (a big config's can take a minute): the user's own
    typos first, with or without a driver (an op or config that is not there, a --shape the
    op does not take, a --settle or --clocks value that is not a choice), then, with
    `where`, a missing NVIDIA driver for it (`require_driver`)."""
    check_target(selection.target, selection.ops or None, selection.shapes)
    given = {k: v for k, v in selection.timing.items() if v is not None}
    low, high = given.get("min_time_s"), given.get("max_time_s")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
        # asked for both at once (a config's or the default min yields to a shorter max)
        raise SweepError(
            f"--min-time {low:g} is above --max-time {high:g}: a row stops at its max time, so it "
            "would never reach the min; give a min at or below the max"
        )
    checked_timing(dataclasses.replace(TimingOptions(), **given))  # type: ignore[arg-type]
    if where is not None:
        require_driver(where)


def planned(
    selection: Selection, observer: Observer, expand: bool = True, where: Where | None = None
) -> Plan:
    """The plan of a selection (SweepError for bad usage); the kernel files that could not
    be loaded are said at once, the run goes on without them. `preflight` first."""
    preflight(selection, where)
    work = plan(
        selection.target,
        selection.shapes,
        selection.variants,
        selection.kernels,
        selection.dtypes,
        selection.params,
        expand=expand,
        ops=selection.ops or None,
        **selection.timing,
    )
    for problem in work.problems:
        observer.error(problem)
    return work


# The run step of a session: given the prepared plan and the started sweep, run it and
# return (the use case's own value, the rows to finish with; None: the sweep's).
Body = Callable[[Plan, Sweep, Session], tuple[T, list[ResultRow] | None]]


# A step before the rows (run --verify's pass): given the plan, the session and a progress of
# its own, it returns the plan whose rows the body runs.
First = Callable[[Plan, Session, Progress], Plan]


def run_all(work: Plan, sweep: Sweep, session: Session) -> tuple[None, None]:
    """The plain body: every job in one round."""
    sweep.run(work.jobs)
    return None, None


def in_session(
    work: Plan,
    where: Where,
    command: str,
    recording: Recording,
    observer: Observer,
    body: Body[T],
    *,
    first: First | None = None,
    label: str | None = None,
    tuned: bool = True,
    notes: bool = True,
    total: int | None = None,
    ceilings: bool = False,
    recalibrate: bool = False,
    started: str | None = None,
    record: bool = True,
) -> tuple[RunRecord, T]:
    """The session's sequence, written once: open the executor for `where` (with the plan's
    clock), prepare the plan for its GPU (`tuned`: the tuning file's configurations; the
    plan's notes said unless `notes` is off), start the run (`label`, default the plan's ops;
    its files, metadata, history database unless `record` is off, and with `ceilings` the
    `% ceiling` column's ceilings, measured first where none are kept), run `first` (if any)
    inside a progress of its own, then `body` on the plan it returns inside the observer's
    progress (`total` rows, default that plan's; 0: not known), so that the rows' progress
    counts their own rows and seconds; finish. Interrupted and SweepFailed keep the finished
    rows and leave through the observer's progress."""
    with Session.open(where, work.timing.timer, job_libraries(work.jobs)) as session:
        work = session.prepare(work, tuned)
        for line in work.notes if notes else ():
            observer.note(line)
        with contextlib.ExitStack() as stack:
            bar = stack.enter_context(observer.progress(None, 1)) if ceilings else None
            sweep = session.start(
                label or work.op_label,
                work.timing,
                command,
                output=recording.output,
                db=recording.db,
                record=record,
                tag=recording.tag,
                ceilings=ceilings,
                recalibrate=recalibrate,
                listener=bar,
                announce=bar.announce if bar is not None else None,
                started=started,
                force=recording.force,
            )
        if session.history_error:
            observer.error(f"{session.history_error}; the results files are still written")
        timed = work
        if first is not None:
            with observer.progress(None, len(session.devices)) as bar:
                timed = first(work, session, bar)
        rows_expected = timed.rows_expected if total is None else total
        with observer.progress(rows_expected or None, len(session.devices)) as bar:
            sweep.listener = bar
            value, rows = body(timed, sweep, session)
        csv_path, json_path = session.finish(rows)
    done = RunRecord(
        work=work,
        rows=sweep.rows if rows is None else rows,
        meta=sweep.meta,
        stem=sweep.stem,
        csv_path=csv_path,
        json_path=json_path,
        info=session.info,
        devices=tuple(session.devices),
        executor_notes=tuple(session.notes),
        history_error=session.problems,
    )
    return done, value


def with_timing(selection: Selection, **changes: object) -> Selection:
    """The selection with these TimingOptions fields changed too."""
    return dataclasses.replace(selection, timing={**selection.timing, **changes})
