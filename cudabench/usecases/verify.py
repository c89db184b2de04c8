"""`cudabench verify` (and `cudabench.verify`, and `run --verify`'s pass before timing): for
each variant of an op, in each dtype, the smallest shape where it is wrong, within a budget.

    plan_verify    the op's variants and dtypes (execution/plan.py, at a probe shape the op
                   takes), bad usage a SweepError
    verify         one call: the session, the `verify_<op>` sweep (results files, history),
                   one search per variant (verification/search.py) whose oracle is a round of
                   check-only jobs on that sweep (each shape validated once, never timed),
                   the verdicts; each variant's first checks (its compile, and the
                   warm-up of the kinds of shape the op's earlier variants in the dtype did
                   not warm, verification/warm.py) made before its budget starts
    verify_pass    the same searches on a session a `run` opened, on a sweep of their own,
                   before the run times anything

A verdict says `verified` over N shapes (the smallest and the largest that ran), or `wrong at
SHAPE` with the row's FAIL, CRASH, TIMEOUT or ERROR detail and the `cudabench run` line that
reproduces it. Nothing here prints.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cudabench.backends import backend_name
from cudabench.core.errors import SweepError
from cudabench.core.names import UnknownName
from cudabench.core.records import VERIFY_PASS, Case, DeviceInfo, KernelVariant, ResultRow, Shape, Status
from cudabench.core.shapes import shape_text
from cudabench.execution.plan import Plan, plan
from cudabench.execution.session import Session
from cudabench.execution.sweep import MANY_ROWS_SAVE_S, Listener, Sweep
from cudabench.measure.runner import CaseJob
from cudabench.ops import registry
from cudabench.usecases.flow import Placement, Recording, in_session
from cudabench.usecases.observe import Observer, Silent
from cudabench.verification.domain import Domain
from cudabench.verification.search import EXAMPLES, UNTESTED, Probe, Search, VariantVerdict
from cudabench.verification.warm import first_checks, kind, warm_shapes

BUDGET_S = 60.0  # seconds a variant (in a dtype) at most, `cudabench verify`
RUN_BUDGET_S = 10.0  # `run --verify`'s short pass
RUN_EXAMPLES = 30
WARM_NOTE_S = 1.0  # first checks and a warm-up this long are said; cached, they take ~0.2 s
TIMEOUT_S = 60.0  # a shape's check (compile included) before its worker is killed: TIMEOUT
MEMORY_SHARE = 0.9  # of the card's memory a shape may need (op.device_bytes)
FAKE_MEMORY = 256 << 20  # the fake backend computes on the host: shapes up to this much


@dataclass(frozen=True)
class VerifyRequest:
    """What to verify, how long, and where (the CLI's options, the API's arguments)."""

    target: str  # an op name
    variants: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    # --param grids: each configuration verified on its own ({"BLOCK": (128, 256)})
    params: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    kernels: tuple[Path, ...] = ()
    ops: tuple[Path, ...] = ()
    budget_s: float = BUDGET_S
    examples: int = EXAMPLES
    seed: int = 0
    placement: Placement = field(default_factory=lambda: Placement(timeout_s=TIMEOUT_S))
    recording: Recording = field(default_factory=Recording)
    record: bool = True
    command: str = ""


@dataclass(frozen=True)
class VerifyOutcome:
    op: str
    verdicts: list[VariantVerdict]
    rows: list[ResultRow]
    csv: Path
    json: Path
    problems: list[str]  # kernel files that could not be loaded
    history_error: str = ""
    device: DeviceInfo | None = None

    @property
    def wrong(self) -> bool:
        return any(v.verdict.is_wrong for v in self.verdicts) or bool(self.problems)

    @property
    def untested(self) -> bool:
        """A variant no shape could check (N/A or skipped at every one)."""
        return any(v.verdict.state == UNTESTED for v in self.verdicts)


def plan_verify(request: VerifyRequest) -> Plan:
    """The variants (and dtypes) to verify: `run`'s plan of the op at its smallest shape,
    no baselines. SweepError (one line) for an unknown op, variant, dtype or a config file."""
    try:
        registry.use_ops(list(request.ops) or None)
    except registry.OpsFolderError as exc:
        raise SweepError(str(exc)) from None
    if request.target.endswith((".yaml", ".yml")):
        raise SweepError(f"verify takes an op name, not a config file ({request.target})")
    try:
        op = registry.get_op(request.target)
    except UnknownName as exc:
        raise SweepError(str(exc)) from None
    probe = next(
        ((1,) * rank for rank in range(1, 9) if _takes(op, (1,) * rank)),
        (1,),
    )
    work = plan(
        request.target,
        [probe],
        list(request.variants) or None,
        list(request.kernels) or None,
        list(request.dtypes) or None,
        dict(request.params) or None,
        ops=list(request.ops) or None,
    )
    jobs = [dataclasses.replace(job, baselines=()) for job in work.jobs if job.variants]
    if not jobs and request.variants:
        chosen = ", ".join(request.variants)
        what = "is a library baseline" if len(request.variants) == 1 else "are library baselines"
        raise SweepError(
            f"{request.target}: {chosen} {what}; verify checks kernel variants "
            f"(`cudabench list {request.target}` names them)"
        )
    if not jobs:
        raise SweepError(f"{request.target}: no variant to verify")
    return dataclasses.replace(work, jobs=jobs)


def _takes(op: object, shape: Shape) -> bool:
    try:
        op.check_shape(shape)  # type: ignore[attr-defined]
    except ValueError:
        return False
    return True


def memory_limit(info: DeviceInfo) -> int:
    """The device memory a shape may need: a share of the card's (op.device_bytes); on the
    fake backend, which computes on the host, $CUDABENCH_FAKE_MEMORY or 256 MiB."""
    limit = int(info.total_memory_bytes * MEMORY_SHARE)
    if backend_name() == "fake" and not os.environ.get("CUDABENCH_FAKE_MEMORY", "").isdigit():
        limit = min(limit, FAKE_MEMORY)
    return limit


class SweepOracle:
    """A search's oracle: each shape a check-only job of the variant on the sweep, a round
    of shapes one `sweep.run` (spread over the GPUs)."""

    def __init__(self, sweep: Sweep, job: CaseJob, variant: KernelVariant) -> None:
        self.sweep, self.job, self.variant = sweep, job, variant

    def __call__(self, shapes: list[Shape], warm_ups: Sequence[tuple[Shape, ...]] = ()) -> list[Probe]:
        """The probes of `shapes`; the i-th shape's job carries `warm_ups[i]` (runner.py)."""
        case = self.job.case
        jobs = [
            CaseJob(
                Case(case.op, shape, case.dtype),
                (self.variant,),
                (),
                self.job.timing,
                self.job.op_file,
                check_only=True,
                warm_up=warm_ups[i] if i < len(warm_ups) else (),
            )
            for i, shape in enumerate(shapes)
        ]
        probes = []
        for shape, rows in zip(shapes, self.sweep.run(jobs)):
            row = rows[0] if rows else None
            probes.append(Probe(shape, row.status if row is not None else Status.ERROR, row))
        return probes


def reproduce_line(
    op: str,
    variant: KernelVariant,
    dtype: str,
    shape: Shape,
    ops: Iterable[Path] = (),
    kernels: Iterable[Path] = (),
) -> str:
    """The plain `cudabench run` line that runs the variant at the shape again; its --ops and
    --kernels folders in full, so that it works pasted in another folder."""
    words = ["cudabench", "run", op, "-s", shape_text(shape), "-v", variant.name]
    if dtype != "float32":
        words += ["-d", dtype]
    defaults = {name: values[0] for name, values in variant.params}
    for name, value in variant.values:
        if defaults.get(name) != value:
            words += ["-p", f"{name}={value}"]
    for folder in ops:
        words += ["--ops", str(Path(folder).resolve())]
    for folder in kernels:
        words += ["--kernels", str(Path(folder).resolve())]
    return shlex.join(words)


def verify_jobs(
    jobs: list[CaseJob],
    info: DeviceInfo,
    sweep: Sweep,
    budget_s: float,
    examples: int,
    seed: int,
    batch: int,
    ops: Iterable[Path] = (),
    kernels: Iterable[Path] = (),
    observer: Observer | None = None,
) -> list[VariantVerdict]:
    """One search per variant of each job (a job per dtype), in turn, on `sweep`. A variant's
    budget starts after its first checks (`first_checks`: the variant compiled and loaded,
    and the warm-up of the kinds of shape the op's earlier variants in the dtype did not
    warm, verification/warm.py); long ones (CuPy compiled kernels) are said to the observer.
    A verdict's seconds count them too."""
    verdicts = []
    warmed: dict[tuple[str, str], set[tuple[object, ...]]] = {}  # (op, dtype) -> kinds warmed
    for job in jobs:
        op = job.op()
        for variant in job.variants:
            domain = Domain(op, variant, job.case.dtype, memory_limit(info), info)
            oracle = SweepOracle(sweep, job, variant)
            edges = domain.edges()
            done = warmed.setdefault((job.case.op, job.case.dtype), set())
            warm_up = warm_shapes(edges, done)
            begin = time.perf_counter()
            # (not on this machine: no check at all, Search.run says why)
            known, sent = first_checks(oracle, edges, warm_up) if not domain.unavailable else ([], [])
            seconds = time.perf_counter() - begin
            done.update(kind(s) for s in sent)
            if seconds >= WARM_NOTE_S and observer is not None:
                warming = (
                    f" and a warm-up of {len(sent)} small shapes' checks (CuPy's kernels)" if sent else ""
                )
                observer.note(
                    f"{job.case.op} {variant.label} {job.case.dtype}: {seconds:.1f} s on its first "
                    f"{len(known)} check{'s' if len(known) != 1 else ''}: its compile{warming}, kept "
                    "in their caches; not counted in the budget"
                )
            verdict = Search(domain, oracle, budget_s, examples, seed, batch, known=known).run()
            verdict = dataclasses.replace(verdict, elapsed_s=verdict.elapsed_s + seconds)
            line = ""
            if verdict.wrong is not None:
                line = reproduce_line(job.case.op, variant, job.case.dtype, verdict.wrong.shape, ops, kernels)
            verdicts.append(VariantVerdict(job.case.op, variant, job.case.dtype, verdict, line))
    return verdicts


def verify(request: VerifyRequest, observer: Observer | None = None) -> VerifyOutcome:
    """Verify every chosen variant of the op (each dtype), each within `budget_s` seconds,
    recording every shape checked as a row of the run `verify_<op>`, in one session
    (flow.in_session). SweepError for bad usage; Interrupted (the rows kept) on Ctrl-C."""
    observer = observer or Silent()
    if not request.budget_s > 0:
        raise SweepError(
            f"a budget of {request.budget_s:g} s checks nothing: give seconds a variant, more than 0"
        )
    work = plan_verify(request)
    planned = {v.name for job in work.jobs for v in job.variants}
    baselines = [name for name in request.variants if name not in planned]  # (plan_verify's check)
    if baselines:
        observer.note(
            f"{', '.join(baselines)}: a library baseline, not verified (verify checks kernel variants)"
        )

    def body(work: Plan, sweep: Sweep, session: Session) -> tuple[list[VariantVerdict], None]:
        sweep.save_every_s = MANY_ROWS_SAVE_S
        verdicts = verify_jobs(
            work.jobs,
            session.info,
            sweep,
            request.budget_s,
            request.examples,
            request.seed,
            len(session.devices),
            request.ops,
            request.kernels,
            observer,
        )
        return verdicts, None

    done, verdicts = in_session(
        work,
        request.placement.where,
        request.command or f"cudabench verify {request.target}",
        request.recording,
        observer,
        body,
        label=f"verify_{work.op_label}",
        tuned=False,
        total=0,
        record=request.record,
    )
    return VerifyOutcome(
        done.work.op_label,
        verdicts,
        done.rows,
        done.csv_path,
        done.json_path,
        list(done.work.problems),
        done.history_error,
        done.info,
    )


def verify_pass(
    session: Session,
    work: Plan,
    command: str,
    budget_s: float = RUN_BUDGET_S,
    examples: int = RUN_EXAMPLES,
    output: Path | None = None,
    listener: Listener | None = None,
    ops: Iterable[Path] = (),
    kernels: Iterable[Path] = (),
    observer: Observer | None = None,
) -> tuple[list[VariantVerdict], tuple[Path, Path]]:
    """`run --verify`: each distinct variant of the run's jobs (in each dtype) verified on
    the run's session, on a sweep of its own (`verify_<op>` files, the run's history
    database), before the run times anything. Returns the verdicts and the CSV and JSON paths."""
    seen: dict[tuple[str, str, str], CaseJob] = {}
    for job in work.jobs:
        for variant in job.variants:
            key = (job.case.op, variant.label, job.case.dtype)
            if key not in seen:
                seen[key] = dataclasses.replace(job, variants=(variant,), baselines=())
    sweep = session.new_sweep(
        f"verify_{work.op_label}",
        work.timing,
        f"{command} {VERIFY_PASS}",
        output=_beside(output),
        listener=listener,
        history=session.history,
    )
    sweep.save_every_s = MANY_ROWS_SAVE_S
    verdicts = verify_jobs(
        list(seen.values()),
        session.info,
        sweep,
        budget_s,
        examples,
        0,
        len(session.devices),
        ops,
        kernels,
        observer,
    )
    return verdicts, sweep.finish()


def _beside(output: Path | None) -> Path | None:
    """Where a run's verify pass writes: the run's --output folder, or beside its file stem."""
    if output is None or output.is_dir() or not output.suffix and not output.exists():
        return output
    return output.parent


def without_wrong(work: Plan, verdicts: list[VariantVerdict]) -> Plan:
    """The run's plan without the variants the verify pass found wrong (they are not timed)."""
    wrong = {(v.op, v.label, v.dtype) for v in verdicts if v.verdict.is_wrong}
    jobs = [
        dataclasses.replace(
            job,
            variants=tuple(v for v in job.variants if (job.case.op, v.label, job.case.dtype) not in wrong),
        )
        for job in work.jobs
    ]
    return dataclasses.replace(work, jobs=[j for j in jobs if j.variants or j.baselines])


def as_record(v: VariantVerdict, results: Path) -> dict[str, object]:
    """A verdict as a flat record (the API's DataFrame row)."""
    found = v.verdict
    row = v.wrong_row
    return {
        "op": v.op,
        "variant": v.label,
        "dtype": v.dtype,
        "verdict": found.state,
        "shapes": found.tried,
        "smallest": shape_text(found.smallest) if found.smallest else None,
        "largest": shape_text(found.largest) if found.largest else None,
        "wrong_at": shape_text(found.wrong.shape) if found.wrong else None,
        "untried": found.untried,
        "status": row.status.value if row is not None else None,
        "detail": row.error if row is not None else (found.untried_why or None),
        "found_at": shape_text(found.found.shape) if found.found else None,
        "complete": found.complete,
        "seconds": found.elapsed_s,
        "reproduce": v.reproduce or None,
        "results": str(results.resolve()),
    }
