"""Profile: run the asked cases under Nsight Compute, one launch each, and join ncu's metrics
to the rows by NVTX range, beside cudabench's own time. `cudabench profile` and
`cudabench.api.profile` are `profile_cases`; `python -m cudabench.profiled` (the process ncu
profiles) is `profiled_child`.

Steps: plan the cases as `run` does; hand the plan to a child as data (a pickled
`ProfileRequest`) and run `ncu ... python -m cudabench.profiled REQUEST` (ncu.profile_command);
read the report's raw page back (ncu.parse_raw_csv) and join its kernels to the rows by NVTX
range; time the same cases normally (unless `time_it` is off); write the results files (rows
with their `ncu` metrics) and the report `<stem>.ncu-rep` side by side.
"""

from __future__ import annotations

import dataclasses
import pickle
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.core.errors import ResultsError, UsageError
from cudabench.core.records import ResultRow, RowKey, RunMeta, Status
from cudabench.core.timing import ProfileMetrics, TimingOptions
from cudabench.execution.ncu import (
    NcuError,
    cold_l2_note,
    find_ncu,
    import_command,
    metrics_by_case,
    ncu_messages,
    parse_raw_csv,
    profile_command,
)
from cudabench.execution.session import Session, results_stem
from cudabench.execution.sweep import Sweep
from cudabench.record.results import read_results, write_results
from cudabench.record.stems import now_utc, stem_file
from cudabench.usecases.flow import (
    DEFAULT_TIMEOUT_S,
    Failed,
    InProcess,
    Placement,
    Plan,
    Recording,
    Selection,
    in_session,
    planned,
    run_all,
    with_timing,
)
from cudabench.usecases.observe import Observer, Silent

__all__ = [
    "ProfileRequest",
    "ProfileResult",
    "Profiling",
    "for_profiling",
    "ncu_command",
    "profile_cases",
    "profiled_child",
    "write_request",
]

NO_KERNELS = "No kernels were profiled"


@dataclass(frozen=True)
class Profiling:
    """A profile: what (`selection`), on which GPU, recorded how; ncu's executable (default:
    on PATH or in the CUDA toolkit), a section set, sections and extra metrics to collect;
    `cold`: ncu flushes the caches before each kernel (and the timed run flushes L2), the L2
    hit rate of each launch's reads asked; `time_it`: also time the cases normally;
    `warmup`: launches before the profiled one."""

    selection: Selection
    device: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    recording: Recording = field(default_factory=Recording)
    ncu: str | None = None
    section_set: str | None = None
    sections: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    cold: bool = True
    time_it: bool = True
    warmup: int = 1
    command: str = ""


@dataclass(frozen=True)
class ProfileResult:
    """The profiled rows (each with its `ncu` metrics), the run's metadata and files, and
    the ncu report."""

    work: Plan
    rows: list[ResultRow]
    meta: RunMeta
    csv_path: Path
    json_path: Path
    report: Path
    cold: bool
    history_error: str = ""

    @property
    def l2_warnings(self) -> list[tuple[RowKey, str]]:
        """A cold profile's rows whose launch hit L2 on more than half its read sectors,
        with the warning (ncu.cold_l2_note): was the flush effective?"""
        found = [(row.key, cold_l2_note(row.ncu)) for row in self.rows] if self.cold else []
        return [(key, warning) for key, warning in found if warning]

    @property
    def exit_status(self) -> int:
        """2 the history database failed, 1 a kernel row failed or a kernel file did not
        load, 0 otherwise (ncu's own failures raise Failed)."""
        if self.history_error:
            return 2
        failed = any(r.status.is_failure and not r.is_baseline for r in self.rows)
        return 1 if failed or self.work.problems else 0


# ---------------------------------------------------------------- the child's request


@dataclass(frozen=True)
class ProfileRequest:
    """What the profiled child runs: the parent's plan (each job's warm-up the launches
    before the profiled one), on `device`, its rows written to `rows` (a .json path)."""

    work: Plan
    device: int
    rows: Path
    command: str


def write_request(request: ProfileRequest, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(request))


def for_profiling(work: Plan, warmup: int) -> Plan:
    """The plan as the child runs it: `warmup` launches before the profiled one, events (no
    CUPTI under ncu), the header defaults (the parent planned without the tuning file)."""

    def adjust(timing: TimingOptions) -> TimingOptions:
        return dataclasses.replace(timing, warmup=warmup, timer="events")

    jobs = [dataclasses.replace(job, timing=adjust(job.timing)) for job in work.jobs]
    return dataclasses.replace(work, jobs=jobs, timing=adjust(work.timing))


def profiled_child(request: ProfileRequest) -> list[ResultRow]:
    """The process ncu profiles: the parent's plan in this process in profile mode (nothing
    timed, each NVTX range holding exactly one call of its variant), its rows written to the
    request's file (no history database: the parent records its own timed run). SweepError
    (a UsageError) when the session cannot open."""
    done, _ = in_session(
        request.work,
        InProcess(request.device, profile=True),
        request.command,
        Recording(output=request.rows),
        Silent(),
        run_all,
        tuned=False,
        notes=False,
        record=False,
    )
    return done.rows


# ---------------------------------------------------------------- the parent


@dataclass(frozen=True)
class _Staged:
    """A profile planned, its files named and its ncu command line made."""

    work: Plan
    ncu: str
    started: str
    stem: Path
    report: Path
    scratch: Path
    request: Path
    command: list[str]
    cases: int

    def child_request(self, profiling: Profiling) -> ProfileRequest:
        work = for_profiling(self.work, profiling.warmup)
        return ProfileRequest(work, profiling.device, self.scratch / "profiled.json", profiling.command)


def _cases(work: Plan) -> list[tuple[str, str, str, str]]:
    return [
        (job.case.op, name, job.case.shape_text, job.case.dtype)
        for job in work.jobs
        for name in [*(v.label for v in job.variants), *job.baselines]
    ]


def _stage(profiling: Profiling, observer: Observer, need_ncu: bool) -> _Staged:
    """Plan the cases (said: the kernel files that did not load, the plan's notes), find ncu
    (a UsageError where it is missing and `need_ncu`), name the files (refused before
    anything runs when they cannot be written) and make ncu's command line."""
    work = planned(with_timing(profiling.selection, cold=profiling.cold), observer)
    for line in work.notes:
        observer.note(line)
    started = now_utc()
    try:
        ncu_path = find_ncu(profiling.ncu)
    except NcuError as exc:
        if need_ncu:
            raise UsageError(str(exc)) from None
        ncu_path = profiling.ncu or "ncu"
    recording = profiling.recording
    stem = results_stem(recording.output, work.op_label, started, recording.force)
    report = stem_file(stem, ".ncu-rep")
    scratch = Path(tempfile.gettempdir()) / f"cudabench-profile-{stem.name}"
    request = scratch / "request.pickle"
    child = [sys.executable, "-m", "cudabench.profiled", str(request)]
    cases = _cases(work)
    command = profile_command(
        ncu_path,
        cases,
        report,
        child,
        cold=profiling.cold,
        section_set=profiling.section_set,
        sections=profiling.sections,
        metrics=profiling.metrics,
    )
    return _Staged(work, ncu_path, started, stem, report, scratch, request, command, len(cases))


def ncu_command(profiling: Profiling, observer: Observer | None = None) -> list[str]:
    """The ncu command line that profiles the cases, to run by hand (its request written
    where the command reads it); nothing runs, and ncu need not be installed."""
    staged = _stage(profiling, observer or Silent(), need_ncu=False)
    write_request(staged.child_request(profiling), staged.request)
    return staged.command


def _run_ncu(command: list[str], report: Path, observer: Observer) -> None:
    """Run ncu; Failed with its own message if it refuses or profiles nothing."""
    with observer.working(f"profiling under ncu ({len(command)} arguments) ..."):
        try:
            proc = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            raise UsageError(f"cannot start {command[0]}: {exc.strerror}") from None
    output = proc.stdout + proc.stderr
    messages = ncu_messages(output)
    # the exit status is cudabench's own (1 when a row failed; the rows say which)
    refused = any(m.startswith("==ERROR==") for m in messages)
    if refused or not report.exists() or NO_KERNELS in output:
        lines = messages or output.strip().splitlines()[-10:] or [f"exit status {proc.returncode}"]
        raise Failed(f"ncu did not profile the cases (exit status {proc.returncode}):", lines)


def _read_report(ncu: str, report: Path, extra: list[str]) -> dict[RowKey, ProfileMetrics]:
    proc = subprocess.run(import_command(ncu, report), capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failed(
            f"ncu could not read {report}: "
            f"{' '.join(ncu_messages(proc.stdout + proc.stderr)) or proc.stderr.strip()}"
        )
    try:
        return metrics_by_case(parse_raw_csv(proc.stdout, extra), extra)
    except NcuError as exc:
        raise Failed(str(exc)) from None


def _join(
    rows: list[ResultRow], metrics: dict[RowKey, ProfileMetrics], launches: dict[str, int], cold: bool = False
) -> list[ResultRow]:
    """Each row with its range's metrics; a note where ncu saw no kernel, or an unexpected
    number of them (a variant's header says how many launches a call makes), and for a
    `cold` profile where the launch's reads hit L2 heavily (ncu.cold_l2_note)."""
    joined = []
    for row in rows:
        found = metrics.get(row.key)
        note = ""
        if found is None and row.status is Status.OK:
            note = "ncu profiled no kernel in this row's range"
        elif found and row.label in launches and found.kernels != launches[row.label]:
            note = f"ncu saw {found.kernels} kernels, the variant launches {launches[row.label]}"
        notes = "; ".join(n for n in (row.notes, note, cold_l2_note(found) if cold else "") if n)
        joined.append(dataclasses.replace(row, ncu=found, notes=notes))
    return joined


def profile_cases(profiling: Profiling, observer: Observer | None = None) -> ProfileResult:
    """Profile the cases under ncu, then (with `time_it`) time them in a session of their own
    (recorded in the history database) and join ncu's metrics to those rows; without it, the
    profiled child's rows are the result. UsageError: ncu missing, files that cannot be
    written; Failed: ncu refused, profiled nothing, or left a report or rows that do not read."""
    observer = observer or Silent()
    staged = _stage(profiling, observer, need_ncu=True)
    work, cold = staged.work, profiling.cold
    observer.say(
        f"ncu: {staged.cases} cases, one launch each; --clock-control none (the GPU's own "
        f"clocks, as cudabench times), --cache-control {'all' if cold else 'none'} "
        f"({'caches flushed before each kernel' if cold else 'hot caches'})"
    )
    staged.report.unlink(missing_ok=True)
    write_request(staged.child_request(profiling), staged.request)
    extra = list(profiling.metrics)
    try:
        _run_ncu(staged.command, staged.report, observer)
        metrics = _read_report(staged.ncu, staged.report, extra)
        child_meta, child_rows = read_results(staged.scratch / "profiled.json")
    except ResultsError as exc:
        raise Failed(f"the profiled run left no results: {exc}") from None
    finally:
        shutil.rmtree(staged.scratch, ignore_errors=True)

    launches = {
        v.label: len(v.launches) for job in work.jobs for v in job.variants if v.kind == "cuda"
    }  # a Python variant's kernel count is its own
    if not profiling.time_it:  # ncu's rows only: nothing timed, nothing for the history
        meta = dataclasses.replace(
            child_meta, command=profiling.command, started=staged.started, complete=True
        )
        rows = _join(child_rows, metrics, launches, cold)
        csv_path, json_path = write_results(staged.stem, meta, rows)
        return ProfileResult(work, rows, meta, csv_path, json_path, staged.report, cold)

    def timed(prepared: Plan, sweep: Sweep, session: Session) -> tuple[None, list[ResultRow]]:
        sweep.run(prepared.jobs)
        return None, _join(sweep.rows, metrics, launches, cold)  # recorded with ncu's metrics

    recording = profiling.recording
    done, _ = in_session(
        work,
        Placement((profiling.device,), profiling.timeout_s).where,
        profiling.command,
        Recording(stem_file(staged.stem, ".json"), recording.db, recording.tag, force=True),
        observer,
        timed,
        tuned=False,
        notes=False,
        started=staged.started,
    )
    return ProfileResult(
        done.work,
        done.rows,
        done.meta,
        done.csv_path,
        done.json_path,
        staged.report,
        cold,
        done.history_error,
    )
