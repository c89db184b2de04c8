"""The session: the set-up below every front door, written once.

`cudabench run`, `tune`, `profile`, `ceilings`, `cudabench.run`, `cudabench.tune`, the Dask
cluster path and the process `profile` runs under ncu all go through it:

    work = plan("reduce", [(1 << 24,)], ...)                       # plan.py, no GPU yet
    with Session.open(Local((0,)), work.timing.timer) as session:  # the executor
        work = session.prepare(work, tuned=True)                   # this GPU's plan
        sweep = session.start(work.op_label, work.timing, command, # results stem, metadata,
                              output=None, ceilings=True)          # history, ceilings
        sweep.run(work.jobs)                                       # the rows, each saved
        csv_path, json_path = session.finish()

Opening: the executor (executors.py: a worker pool, a cluster or this process). Preparing: the
clock the executor resolved (`--timer auto` becomes cupti or events once, here, into every
job and the plan's timing, which the run's metadata then records as it is) and the tuning
file's configurations for this GPU model. Starting: where the files go
(refused before anything runs when that folder cannot be written), the run's metadata, the
history database (a database that cannot be opened is `history_error`: the run goes on, the
command then fails), and the `% ceiling` column's ceilings (measured first on this executor
when none are kept). Nothing here prints; bad usage is a SweepError (one line).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cudabench.backends import backend_name
from cudabench.backends.clocklock import held, restore_left, state_dir
from cudabench.backends.nvml import Gauge, open_gauge
from cudabench.build.nvcc import NVCC_FLAGS, nvcc_version
from cudabench.core.errors import ResultsError, SweepError
from cudabench.core.records import Ceilings, DeviceInfo, ResultRow, RunMeta
from cudabench.core.timing import TimingOptions
from cudabench.core.version import __version__
from cudabench.execution.calibration import calibrate, use_ceilings
from cudabench.execution.executors import (
    Cluster,
    Executor,
    InProcess,
    InProcessExecutor,
    Local,
    Where,
    open_executor,
)
from cudabench.execution.plan import Plan, apply_tuned
from cudabench.execution.pool import WorkerPool
from cudabench.execution.sweep import Listener, Sweep
from cudabench.execution.worker_process import parse_devices
from cudabench.record.history import History, HistoryError
from cudabench.record.results import git_sha
from cudabench.record.stems import claim_stem, now_utc

__all__ = ["Cluster", "InProcess", "Local", "Session", "Where", "parse_devices", "results_stem"]


def results_stem(output: Path | None, label: str, started: str, force: bool = False) -> Path:
    """Where a run's files go (`--output` a folder or a file stem; default results/); a
    SweepError if that folder cannot be written, or if an earlier run's results file is
    there (unless `force`)."""
    try:
        return claim_stem(output, label, started, force)  # no other run writes these files
    except ResultsError as exc:
        raise SweepError(str(exc)) from None


class Session:
    """One command's GPU work: its executor, and the run it records (`start` ... `finish`)."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.history: History | None = None
        self.history_error = ""  # the database could not be opened: the run went on without
        self.sweep: Sweep | None = None
        self._held = contextlib.ExitStack()  # the SM clock lock (--clocks), reset on close
        # an SM clock an earlier run locked and never gave back (it was killed): reset first
        self.clock_notes: list[str] = restore_left(self._gauge) if state_dir().is_dir() else []

    def _gauge(self, pci_bus_id: str) -> Gauge | None:
        """NVML's gauges of the run's GPU, opened here (a worker's crash cannot skip the reset):
        the in-process backend's own (the fake's in tests), else found by PCI bus id."""
        if isinstance(self.executor, InProcessExecutor):
            info = self.executor.info
            return self.executor.backend.gauge() if pci_bus_id == info.pci_bus_id else None
        return open_gauge(pci_bus_id) if pci_bus_id else None

    def _hold_clocks(self, timing: TimingOptions) -> tuple[TimingOptions, list[str]]:
        """Lock the SM clock for the run as `timing.clocks` asks (held until close); where it
        cannot be, the run goes on at the driver's clocks, its timing saying `default`."""
        if timing.clocks == "default":
            return timing, []
        if len(self.devices) > 1:
            raise SweepError(
                f"--clocks {timing.clocks}: locks the SM clock of one GPU; run on one (--devices 0)"
            )
        gauge = self._gauge(self.info.pci_bus_id)
        if gauge is None:
            why = f"--clocks {timing.clocks}: NVML does not see this GPU; the run used the driver's clocks"
        else:
            why = self._held.enter_context(held(gauge, self.info.pci_bus_id, timing.clocks))
        if why:
            return dataclasses.replace(timing, clocks="default"), [why]
        return timing, []

    @classmethod
    def open(
        cls, where: Where | None = None, timer: str = "events", preload: tuple[str, ...] = ()
    ) -> Session:
        """The session on `where` (default: GPU 0 of this host), its executor running; `timer`
        is the clock asked for (the workers start CUPTI once unless events); `preload`: the
        libraries the jobs import (plan.job_libraries: baselines' and Python variants'),
        imported by each GPU's successor beside its plain worker (execution/pool.py). SweepError when
        there is no GPU, CUPTI cannot start for the asked clock, or no cluster answers."""
        return cls(open_executor(where or Local(), timer, preload))

    # ------------------------------------------------------------------ the executor's face

    @property
    def info(self) -> DeviceInfo:
        return self.executor.info

    @property
    def versions(self) -> dict[str, str]:
        return self.executor.versions

    @property
    def devices(self) -> list[int]:
        return self.executor.devices

    @property
    def notes(self) -> list[str]:
        """What the executor noticed during the run (a cluster's lost workers)."""
        return self.executor.notes

    @property
    def compile_arch(self) -> str | None:
        """The architecture to compile ahead for in this process (tune: nvcc builds a round's
        configurations while the GPU measures the last), or None where that cannot help: the
        fake backend compiles nothing, and a cluster's nodes compile with their own nvcc."""
        local = isinstance(self.executor, WorkerPool | InProcessExecutor)
        return self.info.arch if local and backend_name() == "cupy" else None

    # ------------------------------------------------------------------ the run

    def prepare(self, work: Plan, tuned: bool = True, tuning_path: Path | None = None) -> Plan:
        """The plan for this session's GPU: every job's clock the one the executor resolved
        (`auto` -> cupti or events), and with `tuned` each variant at the configuration the
        tuning file keeps for this GPU model, op, dtype and shape."""
        if tuned:
            work = apply_tuned(work, self.info.name, tuning_path)
        timer = self.versions.get("timer")
        if not timer or timer == work.timing.timer:
            return work
        timing = dataclasses.replace(work.timing, timer=timer)
        jobs = [
            dataclasses.replace(job, timing=dataclasses.replace(job.timing, timer=timer)) for job in work.jobs
        ]
        return dataclasses.replace(work, jobs=jobs, timing=timing)

    def new_sweep(
        self,
        label: str,
        timing: TimingOptions,
        command: str,
        *,
        output: Path | None = None,
        listener: Listener | None = None,
        history: History | None = None,
        tag: str = "",
        started: str | None = None,
        ceilings: Ceilings | None = None,
        force: bool = False,
    ) -> Sweep:
        """A sweep of its own on this executor (the ceilings' measurement inside a run uses
        one): results stem and metadata, no database unless given."""
        started = started or now_utc()
        stem = results_stem(output, label, started, force)
        meta = self._meta(timing, command, started)
        if ceilings is not None:
            meta = dataclasses.replace(meta, ceilings=ceilings)
        return Sweep.recorded(self.executor, stem, meta, listener, history, tag)

    def start(
        self,
        label: str,
        timing: TimingOptions,
        command: str,
        *,
        output: Path | None = None,
        db: Path | None = None,
        record: bool = True,
        tag: str = "",
        ceilings: bool = False,
        recalibrate: bool = False,
        listener: Listener | None = None,
        announce: Callable[[str], None] | None = None,
        started: str | None = None,
        force: bool = False,
    ) -> Sweep:
        """Open the command's run and return its Sweep: the results stem (SweepError if it
        cannot be written), the metadata, the history database `db` (default results/
        cudabench.db; none with `record=False`), and with `ceilings` the ceilings its
        `% ceiling` column uses (measured first when none are kept: `announce` says so, the
        progress goes to `listener`). `force`: let `output` replace an earlier run's files."""
        started = started or now_utc()
        stem = results_stem(output, label, started, force)  # refused before anything runs
        if record:
            try:
                self.history = History(db).open()
            except HistoryError as exc:
                self.history_error = str(exc)
        timing, notes = self._hold_clocks(timing)
        meta = self._meta(timing, command, started)
        meta = dataclasses.replace(meta, notes=(*meta.notes, *self.clock_notes, *notes))
        if ceilings:
            meta = use_ceilings(self, meta, recalibrate, announce, listener, stem.parent, self.history)
        self.sweep = Sweep.recorded(self.executor, stem, meta, listener, self.history, tag)
        return self.sweep

    def run(self, work: Plan, command: str, **start: object) -> Sweep:
        """`start` (its keywords) for the plan's label and timing, then every job in one round."""
        sweep = self.start(work.op_label, work.timing, command, **start)  # type: ignore[arg-type]
        sweep.run(work.jobs)
        return sweep

    def finish(self, rows: list[ResultRow] | None = None) -> tuple[Path, Path]:
        """Mark the run complete (the files rewritten, with `rows` when given: ncu's metrics
        joined, tune's rows); returns the CSV and JSON paths."""
        if self.sweep is None:
            raise RuntimeError("finish() before start()")
        return self.sweep.finish(rows)

    @property
    def problems(self) -> str:
        """The history database's trouble, at opening or during the run ('' if none)."""
        return self.history_error or (self.sweep.history_error if self.sweep else "")

    def calibrate(
        self,
        size: int | None = None,
        output: Path | None = None,
        listener: Listener | None = None,
        command: str = "cudabench ceilings",
        timing: TimingOptions | None = None,
        force: bool = False,
    ) -> tuple[Ceilings, Sweep]:
        """Measure this GPU's ceilings now (calibration.calibrate)."""
        return calibrate(self, size, output, listener, command, timing, force=force)

    def _meta(self, timing: TimingOptions, command: str, started: str) -> RunMeta:
        """The run's metadata, marked incomplete until the last row is in; `timing` as given
        (its clock decided once, by `prepare`), with the executor's note if the clock it was
        asked for fell back."""
        note = self.versions.get("timer_note", "")
        return RunMeta(
            device=self.info,
            timing_mode=timing.mode,
            command=command,
            started=started,
            cudabench_version=__version__,
            cupy_version=self.versions.get("cupy", ""),
            nvcc_version=nvcc_version(),
            git_sha=git_sha(),
            timing=timing,
            complete=False,
            devices=tuple(self.devices),
            notes=(note,) if note else (),
            compile_flags=" ".join(NVCC_FLAGS),
        )

    # ------------------------------------------------------------------ closing

    def close(self, graceful: bool = True) -> None:
        """Stop the executor (graceful: let workers finish; else kill them) and the database."""
        try:
            self.executor.close(graceful)
        finally:
            try:
                self._held.close()  # the SM clock given back, whatever happened
            finally:
                if self.history is not None:
                    self.history.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(graceful=exc_type is None)  # Ctrl-C or an error: kill the workers now
