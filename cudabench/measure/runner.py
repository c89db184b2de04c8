"""Case x variant loop: every (case, variant) becomes exactly one ResultRow, whatever happens.

For each case, each variant is prepared (prepare.py: requirements, N/A; compile and load,
COMPILE_ERROR; fresh inputs, a NaN-poisoned output, one launch checked against the float64
reference, FAIL), timed (measure.py), and checked again on the last timed launch's output.
The library baselines get the same treatment. Device errors give CRASH, anything else ERROR
(naming the line of the op's own code that raised it, registry.describe_error); the loop goes on.

With `timing.interleave`, all variants of a case are prepared (validated) first, then timed
with their samples taken in turn (measure.measure_interleaved), then checked again; if their
data would not fit in GPU memory at once, the case is timed one variant after another.

NVTX: the range cudabench@<op>/<variant>/<shape>/ holds, in order, the validation launch, the
warm-up launches, the pilot launch, the settling launches (--settle), the timed launches
(batch x samples) and the energy window's back-to-back launches of that variant, and nothing
else: inputs, reference and checks run outside it.

Telemetry (telemetry.py): a row gets the card's clocks, temperatures and slowdowns over its
samples, and an OK hot row its energy per call; `--cooldown` waits before each variant.

Profile mode (`Runner(..., profile=True)`, what `cudabench profile` runs under ncu): nothing
is timed; validation and warm-up run outside the ranges, and each range holds exactly one call
of its variant (all of a multi-kernel variant's launches, once), checked again after.

Everything a case needs travels in `CaseJob` (plain, picklable records), so a later worker
process can run one job with `run_job` and send back its rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from cudabench.backends.base import Backend, KernelCrash
from cudabench.backends.nvtx import nvtx_range
from cudabench.build.nvcc import CompileError
from cudabench.core.names import UnknownName
from cudabench.core.records import Case, DeviceInfo, KernelVariant, ResultRow, Shape, Status, join_notes
from cudabench.core.timing import Measurement, TimingOptions
from cudabench.measure.prepare import Prepared, Preparer, fail_row
from cudabench.measure.problem import warm
from cudabench.measure.sampling import measure, measure_interleaved
from cudabench.measure.telemetry import Energy, cool_down, energy_fields, energy_per_call, telemetry_fields
from cudabench.measure.throughput import bytes_of, timed_fields
from cudabench.ops import pyvariants, registry
from cudabench.ops.protocol import OpProtocol
from cudabench.ops.registry import get_op

T = TypeVar("T")


@dataclass(frozen=True)
class CaseJob:
    """One case and what to run on it. `op_file` is the op's op.py, so that a worker process,
    which does not see the parent's --ops folders, loads the same op: left empty, it is
    filled from the registry where the job is made (the parent)."""

    case: Case
    variants: tuple[KernelVariant, ...]
    baselines: tuple[str, ...]
    timing: TimingOptions
    op_file: str = ""
    # validate only (`cudabench verify`): each variant prepared and checked once, its row OK
    # or why not, with no time; nothing is timed, interleaved or profiled
    check_only: bool = False
    # the seconds its rows took last time on this GPU model (parts.split, from the history
    # database): how the pool (dispatch.py) judges a wait; None where unknown. A hint only
    estimate_s: float | None = None
    # the time (us) its rows' speedups divide by, where the job is timed apart from the first
    # baseline of its case (tune's torch rows, timed after the final round that held CuPy's):
    # None divides by the job's own first baseline that timed OK (sweep.with_speedups)
    divide_by_us: float | None = None
    # verify's warm-up (verification/warm.py), on a check-only job: before the case, these
    # shapes' problems made and checked against their references (CuPy compiles their
    # kernels), and its rows say so (WARM_NOTE)
    warm_up: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        if not self.op_file:
            object.__setattr__(self, "op_file", registry.op_file(self.case.op))

    def op(self) -> OpProtocol:
        """The job's op: loaded from its file, else found by name."""
        return registry.load_op_file(self.op_file) if self.op_file else get_op(self.case.op)

    def libraries(self) -> tuple[str, ...]:
        """The Python libraries the job imports on its first call: its baselines' (OpProtocol's
        optional `libraries`: "torch" for a torch_call) and its Python variants' `needs=`
        ("triton", "torch"); none for a job of CUDA variants alone. The pool sends the job to
        the worker that imported them (execution/pool.py): a worker that has to import torch
        first spends about 4.5 s on it."""
        declared = getattr(self.op(), "libraries", None) if self.baselines else None
        named = tuple(declared(self.baselines)) if declared is not None else ()
        return tuple(dict.fromkeys([*named, *(m for v in self.variants for m in v.needs)]))


class Observer(Protocol):
    """Progress hooks (the CLI draws a progress bar with them); library code never prints."""

    def started(self, case: Case, name: str) -> None: ...

    def finished(self, row: ResultRow) -> None: ...


class _Silent:
    def started(self, case: Case, name: str) -> None:
        pass

    def finished(self, row: ResultRow) -> None:
        pass


def libraries_of(job: CaseJob) -> frozenset[str]:
    """The libraries a job imports (CaseJob.libraries), or none where its op does not load
    here (its rows say why, from the worker that loads it: a Dask node runs the pool with
    the parent's op file path). What the executors place jobs by."""
    try:
        return frozenset(job.libraries())
    except Exception:  # the job's rows carry the op's error
        return frozenset()


def job_failed(job: CaseJob, status: Status, error: str) -> list[ResultRow]:
    """A row of `status` for each variant and baseline of a job that could not run at all
    (on a cluster: a task Dask gave up on)."""
    labels = [v.label for v in job.variants] + list(job.baselines)
    return [ResultRow.of(job.case, label, status, error) for label in labels]


CHECKED_NOTE = "verify: validated once, not timed"  # every row of a check-only job says so,
UNCHECKED_NOTE = "verify: not checked"  # but its N/A and SKIPPED rows
WARM_NOTE = "warm-up: {made} of {shapes} small shapes' references and checks made first"


def checked_row(case: Case, ready: Prepared) -> ResultRow:
    """The row of a check-only job's variant that passed its validation: OK, no time."""
    return ResultRow.of(
        case,
        ready.name,
        Status.OK,
        max_abs_err=ready.first.max_abs_err,
        tolerance=ready.first.tolerance,
        method="verify",  # untimed by design, as profile's rows (method ncu)
        is_baseline=ready.is_baseline,
        **ready.resources,
    )


class Runner:
    """Runs jobs on one backend: prepare.py makes each variant a validated call, this times it."""

    def __init__(self, backend: Backend, observer: Observer | None = None, profile: bool = False) -> None:
        self.backend = backend
        self.profile = profile
        self.preparer = Preparer(backend, profile)
        self.device: DeviceInfo = self.preparer.device
        self.observer = observer or _Silent()
        self._floor: dict[tuple[str, str], float | None] = {}  # (L2 mode, timer) -> floor, us
        self._folder: Path | None = None  # the job's op folder: its code's errors name their line

    def run_job(self, job: CaseJob) -> list[ResultRow]:
        self.backend.activate()  # its stream current, whatever backend was made since
        try:
            op = job.op()
        except (registry.OpLoadError, UnknownName) as exc:  # every row says why
            failed = job_failed(job, Status.ERROR, str(exc))
            for row in failed:
                self.observer.finished(row)
            return failed
        case = job.case
        self._folder = Path(job.op_file).parent if job.op_file else None
        warmed = ""
        if job.warm_up:
            made, missed = warm(self.backend.xp, op, case.dtype, job.warm_up)
            warmed = WARM_NOTE.format(made=made, shapes=len(job.warm_up))
            warmed += f" (the first not made {missed})" if missed else ""
        names = [v.label for v in job.variants] + list(job.baselines)
        needed = op.device_bytes(case.shape)
        free = self.backend.free_bytes() + self.preparer.keep_only(case)  # kept inputs: reused
        interleave = job.timing.interleave and len(names) > 1 and not self.profile and not job.check_only
        if interleave and needed * len(names) > free:  # every variant's data at once
            interleave = False
        rows: list[ResultRow | None] = [None] * len(names)
        prepared: list[tuple[int, Prepared]] = []
        with nvtx_range(op.name):
            for index, name in enumerate(names):
                self.observer.started(case, name)
                if needed > free:
                    outcome: ResultRow | Prepared = ResultRow.of(
                        case,
                        name,
                        Status.SKIPPED,
                        f"needs {needed / 1e9:.2f} GB of GPU memory, {free / 1e9:.2f} GB free",
                    )
                else:
                    outcome = self._run_one(op, job, index, name, time_now=not interleave)
                if isinstance(outcome, Prepared):  # interleaved: timed with the others below
                    prepared.append((index, outcome))
                    continue
                if job.check_only:
                    said = UNCHECKED_NOTE if outcome.status in (Status.N_A, Status.SKIPPED) else CHECKED_NOTE
                    outcome = dataclasses.replace(outcome, notes=join_notes(outcome.notes, said, warmed))
                rows[index] = outcome
                self.observer.finished(outcome)
            if prepared:
                for index, row in self._interleaved(op, case, prepared, job.timing):
                    rows[index] = row
                    self.observer.finished(row)
        return [r for r in rows if r is not None]  # the sweep fills in the speedups

    def _run_one(
        self, op: OpProtocol, job: CaseJob, index: int, name: str, time_now: bool
    ) -> ResultRow | Prepared:
        """Prepare one variant or baseline, then (time_now) time it and build its row."""
        item = job.variants[index] if index < len(job.variants) else name
        begin = time.perf_counter()
        ready = self._guarded(
            job.case, name, lambda: self.preparer.prepare(op, job.case, item, job.timing.fill, share=time_now)
        )
        setup_s = time.perf_counter() - begin
        if not isinstance(ready, Prepared):
            return dataclasses.replace(ready, setup_s=setup_s)
        ready.setup_s = setup_s
        if not time_now:
            return ready
        if job.check_only:
            return dataclasses.replace(checked_row(job.case, ready), setup_s=setup_s)
        if self.profile:
            return self._guarded(job.case, name, lambda: self._profiled(op, job, ready))

        def timed() -> ResultRow:
            waited = self._cool_down(job.timing)
            measurement = measure(self.backend, ready.call, job.timing, ready.scope, ready.reset)
            return self._timed_row(op, job.case, ready, measurement, job.timing, waited)

        begin = time.perf_counter()
        row = self._guarded(job.case, name, timed)
        return dataclasses.replace(row, setup_s=setup_s, measure_s=time.perf_counter() - begin)

    def _interleaved(
        self, op: OpProtocol, case: Case, prepared: list[tuple[int, Prepared]], timing: TimingOptions
    ) -> list[tuple[int, ResultRow]]:
        """Time the prepared calls of one shape with their samples taken in turn."""
        calls = [(p.call, p.scope, p.reset) for _, p in prepared]
        begin = time.perf_counter()
        try:
            waited = self._cool_down(timing)
            measurements = measure_interleaved(self.backend, calls, timing)
        except KernelCrash as exc:  # the context is gone: no row of this shape can finish
            return [(i, ResultRow.of(case, p.name, Status.CRASH, str(exc))) for i, p in prepared]
        except Exception as exc:
            error = registry.describe_error(exc, self._folder)
            return [(i, ResultRow.of(case, p.name, Status.ERROR, error)) for i, p in prepared]
        rows = []
        for (i, p), m in zip(prepared, measurements):
            build = functools.partial(self._timed_row, op, case, p, m, timing, waited)
            rows.append((i, self._guarded(case, p.name, build)))
        share = (time.perf_counter() - begin) / len(prepared)  # the samples were taken in turn
        return [
            (i, dataclasses.replace(r, setup_s=p.setup_s, measure_s=share))
            for (i, r), (_, p) in zip(rows, prepared)
        ]

    def _cool_down(self, timing: TimingOptions) -> float | None:
        """--cooldown: wait, idle, for the GPU to cool to the asked temperature first."""
        gauge = self.backend.gauge()
        if not timing.cooldown_c or gauge is None:
            return None
        return cool_down(gauge, timing.cooldown_c)

    def _energy(self, p: Prepared, m: Measurement, timing: TimingOptions) -> tuple[Energy | None, str]:
        """The energy per call of a hot row (a window of back-to-back calls), or none: cold rows
        (back-to-back calls are not cold), an in-place op's kernels (each call needs its input
        restored), no NVML; a reading that failed is a note, and the row stands without it."""
        gauge = self.backend.gauge()
        if not timing.energy or timing.cold or gauge is None or p.reset is not None:
            return None, ""
        try:
            with p.scope():  # the variant's own launches, in its ranges as the timed ones
                return energy_per_call(self.backend, p.call, gauge, m.median_ms), ""
        except KernelCrash:
            raise
        except Exception as exc:
            return None, f"no energy: {exc}"

    def _guarded(self, case: Case, name: str, body: Callable[[], T]) -> T | ResultRow:
        """body(), or the row its exception stands for."""
        try:
            return body()
        except KernelCrash as exc:
            return ResultRow.of(case, name, Status.CRASH, str(exc))
        except CompileError as exc:
            return ResultRow.of(case, name, Status.COMPILE_ERROR, str(exc))
        except pyvariants.PythonVariantError as exc:  # its file does not import: one line
            return ResultRow.of(case, name, Status.ERROR, str(exc))
        except Exception as exc:  # a failure around the kernel: a row, not a dead run
            if type(exc).__name__ == "OutOfMemoryError":  # CuPy's, with the bytes it wanted
                return ResultRow.of(case, name, Status.SKIPPED, f"out of GPU memory: {exc}")
            return ResultRow.of(case, name, Status.ERROR, registry.describe_error(exc, self._folder))

    def _profiled(self, op: OpProtocol, job: CaseJob, p: Prepared) -> ResultRow:
        """Profile mode: warm-up outside the ranges, then exactly one call inside them."""
        for _ in range(job.timing.warmup):
            self.backend.run(p.call)
        if p.reset is not None:
            p.reset()
        self.backend.synchronize()
        with p.scope():
            self.backend.run(p.call)
            self.backend.synchronize()
        check = p.recheck() if p.recheck is not None else p.first
        if not check.ok:
            return fail_row(job.case, p.name, check, when="profiled call: ", **p.resources)
        return ResultRow.of(
            job.case,
            p.name,
            Status.OK,
            max_abs_err=check.max_abs_err,
            tolerance=check.tolerance,
            err_vs_f32=check.vs_f32,
            samples=1,
            batch=1,
            method="ncu",
            notes=check.note,
            bytes_moved=bytes_of(op, job.case),
            is_baseline=p.is_baseline,
            **p.resources,
        )

    def _timed_row(
        self,
        op: OpProtocol,
        case: Case,
        p: Prepared,
        m: Measurement,
        timing: TimingOptions,
        waited: float | None = None,
    ) -> ResultRow:
        """The row of a timed call, built here and only here: the last timed output checked
        again (the FAIL row if it went wrong), then every column at once: the check's error,
        tolerance and accuracy, the measurement's figures (throughput.py), the card's
        telemetry over the samples, the energy per call where asked, the variant's resources."""
        self.backend.synchronize()
        if p.reset is not None and m.batch > 1:
            # an in-place op's graph applied the call `batch` times to its input, which only an
            # idempotent op survives: its input restored, one call of the timed variant is checked
            p.reset()
            self.backend.run(p.call)
            self.backend.synchronize()
        if p.recheck is not None:
            again = p.recheck()
            if not again.ok:
                return fail_row(case, p.name, again, when="after timing: ", **p.resources)
        figures = timed_fields(op, case, m, self.device, timing, self._launch_floor_us(timing), p.blocks)
        card = telemetry_fields(m, waited)
        energy, energy_note = self._energy(p, m, timing)
        notes = join_notes(figures.pop("notes", ""), card.pop("notes", ""), p.first.note, energy_note)
        return ResultRow.of(
            case,
            p.name,
            Status.OK,
            max_abs_err=p.first.max_abs_err,
            tolerance=p.first.tolerance,
            err_vs_f32=p.first.vs_f32,
            is_baseline=p.is_baseline,
            notes=notes,
            **figures,
            **card,
            **energy_fields(energy, figures),
            **p.resources,
        )

    def _launch_floor_us(self, timing: TimingOptions) -> float | None:
        """The median time of an empty kernel, timed as the rows are (once per L2 mode)."""
        key = (timing.mode, timing.timer)
        if key not in self._floor:
            quick = dataclasses.replace(
                timing, warmup=1, min_samples=5, min_time_s=0.001, max_time_s=0.05, interleave=False
            )
            try:
                m = measure(self.backend, self.backend.empty_call(), quick, contextlib.nullcontext)
                self._floor[key] = m.median_ms * 1e3
            except Exception:  # the floor is a hint: without it, no hint
                self._floor[key] = None
        return self._floor[key]
