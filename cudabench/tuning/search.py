"""`cudabench tune`: search a variant's launch-parameter space for its fastest correct
configuration at one shape and dtype, through the same sweep as `run` (sweep.Sweep: the
worker pool, validation, time-outs, every row saved as it ends, Ctrl-C keeping them).

    space      the header's params and constraints at this shape (strategies.py)
    strategy   proposes configurations in rounds (ask) and hears their times (tell):
               exhaustive, random, or Optuna's TPE sampler (strategies.py)
    compile    each round's configurations are compiled by nvcc in parallel in this process
               (threads, each running nvcc; the cache is keyed on the -D definitions) while
               the GPU measures: a job goes to a worker once its own cubins are ready
    measure    every configuration is validated against the float64 reference and timed with
               quick search timing (SEARCH_TIMING: samples until the median is known to 1%
               or a quarter of its spread, a few milliseconds at most, no NVML telemetry),
               a round's configurations in a few jobs (CHUNK, JOBS_A_ROUND); a wrong,
               crashing or hanging one is a row with its status and the search goes on;
               N/A and SKIPPED (the op rejects the shape, or a block does not fit on an SM)
               do not count against the budget
    final      the best few, the header's default and the library baselines are timed again,
               interleaved, with the full timing, each row until its median is known to
               within FINAL_PRECISION or a quarter of its spread; configurations within the
               noise of the best are reported as ties, not ranked

Nothing here prints: the CLI (cli/tune_cmd.py) renders the Outcome.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from cudabench.core.records import Case, KernelVariant, ResultRow, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution.sweep import Sweep
from cudabench.measure.runner import CaseJob
from cudabench.tuning.outcome import Costs, Outcome, ties_of, values_of
from cudabench.tuning.strategies import SearchSpace, Strategy, TuneError, search_space

# Search timing: enough samples to rank, short enough that a configuration's timing costs
# little more than its GPU time (H200, reduce at 2^24, an 18 us kernel: 7 ms of timing a
# configuration, docs/guide/tuning.md); the finalists get the full timing
SEARCH_TIMING = {
    "warmup": 1,
    "min_samples": 6,  # the fewest whose range is a 95% interval of the median (sampling.py)
    "min_time_s": 0.005,
    "max_time_s": 0.5,
    "batch_target_us": 500.0,
    "precision": 0.01,  # or a quarter of the spread (sampling.precise): enough to pick finalists
    "interleave": False,
    "watch": False,  # NVML's reads: 12 ms of timing a configuration with them, 7 without (H200)
}
FINAL_TOP = 5  # configurations timed again, interleaved, with the full timing
# The final round's rows stop sampling once their medians are known (95%) to within 0.25%,
# a quarter of MIN_TIE (outcome.py), or a quarter of their own spread, whichever is larger (the margin
# ties_of calls a tie), else at the full timing's rule: tens of samples rank them, not the
# 0.2 s each that `run` takes
FINAL_PRECISION = 0.0025
# Configurations per job: at least CHUNK, so that jobs start as soon as their own compiles
# are done; a round in about JOBS_A_ROUND jobs a GPU, so that a worker waits for the parent
# (the rows' bookkeeping, the next job) a few times a round, not every configuration: the
# jobs go out whole (Sweep.run's `whole`), not cut into a configuration each
CHUNK = 4
JOBS_A_ROUND = 8
UNCOUNTED = (Status.N_A, Status.SKIPPED)


Compiler = Callable[[KernelVariant], Any]  # compiles one configuration (the cache keeps it)
Uncompiled = Callable[[list[KernelVariant]], list[KernelVariant]]  # those the cache lacks


class _Compiles:
    """nvcc running ahead of the GPU: each job's configurations that the cache lacks
    (`uncompiled`, one look-up for the round in this thread) are submitted to a thread pool
    as soon as the round is known, and `ready(i)` waits for job i's own. A round of cached
    configurations starts no thread: hundreds of threads looking up the cache at once held the
    parent's interpreter 60 to 70 ms a round (H200 machine, 200 configurations)."""

    def __init__(
        self, compile_one: Compiler | None, threads: int, uncompiled: Uncompiled | None = None
    ) -> None:
        self.compile_one = compile_one
        self.uncompiled = uncompiled
        self.threads = threads
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.jobs: list[list[concurrent.futures.Future[Any]]] = []
        self.compile_s = 0.0  # nvcc's wall time, summed over the threads
        self.waited_s = 0.0  # the sweep's wait for a job's own compiles
        self.submitted = 0  # configurations handed to nvcc (not in the cache)
        self._lock = threading.Lock()

    @property
    def compiling(self) -> bool:
        return self.compile_one is not None

    def _timed(self, variant: KernelVariant) -> Any:
        begin = time.perf_counter()
        try:
            return self.compile_one(variant)  # type: ignore[misc]
        finally:
            with self._lock:
                self.compile_s += time.perf_counter() - begin

    def submit(self, jobs: list[CaseJob]) -> None:
        self.jobs = []
        if self.compile_one is None:
            return
        variants = [v for job in jobs for v in job.variants]
        todo = set(map(id, self.uncompiled(variants) if self.uncompiled else variants))
        for job in jobs:
            missing = [v for v in job.variants if id(v) in todo]
            self.submitted += len(missing)
            futures = []
            if missing:  # the threads start with the first configuration nvcc has to compile
                self.pool = self.pool or concurrent.futures.ThreadPoolExecutor(max_workers=self.threads)
                futures = [self.pool.submit(self._timed, v) for v in missing]
            self.jobs.append(futures)

    def ready(self, index: int) -> None:
        begin = time.perf_counter()
        for future in self.jobs[index] if index < len(self.jobs) else []:
            try:
                future.result()
            except Exception:  # the worker compiles it again and makes the row say why
                pass
        self.waited_s += time.perf_counter() - begin

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def search(
    case: Case,
    space: SearchSpace,
    strategy: Strategy,
    budget: int,
    baselines: tuple[str, ...],
    timing: TimingOptions,
    sweep: Sweep,
    compile_one: Compiler | None = None,
    threads: int | None = None,
    search_timing: TimingOptions | None = None,
    uncompiled: Uncompiled | None = None,
) -> Outcome:
    """Run the search (rounds of the strategy on the sweep), then the final round."""
    start = time.monotonic()
    quick = search_timing or dataclasses.replace(timing, **SEARCH_TIMING)  # type: ignore[arg-type]
    compiles = _Compiles(compile_one, threads or os.cpu_count() or 4, uncompiled)
    by_label: dict[str, ResultRow] = {}
    counted = uncounted = failed = 0
    thinking = setup = measuring = 0.0  # the strategy's seconds; the rounds' rows' costs
    rows_seen = 0
    firsts: dict[int | None, float] = {}  # each worker's first configuration's set-up
    try:
        while counted < budget:
            begin = time.perf_counter()
            configs = strategy.ask(budget - counted)
            thinking += time.perf_counter() - begin
            if not configs:
                break
            variants = [space.variant.configured(c) for c in configs]
            chunk = max(CHUNK, len(variants) // (JOBS_A_ROUND * max(1, len(sweep.executor.devices))))
            jobs = [
                CaseJob(case, tuple(variants[i : i + chunk]), (), quick)
                for i in range(0, len(variants), chunk)
            ]
            compiles.submit(jobs)
            results = sweep.run(jobs, compiles.ready, whole=True)
            rows = {r.label: r for job_rows in results for r in job_rows}
            for ran in (r for job_rows in results for r in job_rows):  # a worker's jobs in turn
                firsts.setdefault(ran.device, ran.setup_s or 0.0)
            setup += sum(r.setup_s or 0 for r in rows.values())
            measuring += sum(r.measure_s or 0 for r in rows.values())
            rows_seen += len(rows)
            begin = time.perf_counter()
            for config, variant in zip(configs, variants):
                row = rows.get(variant.label)
                ok = row is not None and row.status is Status.OK and row.time_us
                strategy.tell(config, row.time_us if ok else None)  # type: ignore[union-attr]
            thinking += time.perf_counter() - begin
            for variant in variants:
                row = rows.get(variant.label)
                if row is None:
                    continue
                by_label[row.label] = row
                if row.status in UNCOUNTED:
                    uncounted += 1
                else:
                    counted += 1
                    failed += row.status.is_failure
        ranked = sorted(
            (r for r in by_label.values() if r.status is Status.OK and r.time_us),
            key=lambda r: r.time_us or 0,
        )
        finalists = [r.label for r in ranked[:FINAL_TOP]]
        # the header's default configuration, searched or not (--param may leave it out):
        # what `run` uses without a tuning file, so what the best is compared with
        default_label = space.variant.label
        searched = by_label.get(default_label)
        if default_label not in finalists and (searched is None or searched.status is Status.OK):
            finalists.append(default_label)
        rounds_s = time.monotonic() - start
        waited = compiles.waited_s
        final = apart = Round()
        if finalists:
            chosen = tuple(space.variant.configured(values_of(label)) for label in finalists)
            final, apart = final_round(case, chosen, baselines, timing, sweep, compiles)
    finally:
        compiles.close()
    for row in final.rows:
        if not row.is_baseline:
            by_label[row.label] = row
    timed = final.rows + apart.rows
    baseline_rows = [r for r in timed if r.is_baseline]
    ordered = sorted(timed, key=lambda r: (r.status is not Status.OK, r.time_us or float("inf")))
    ties = ties_of(final.rows)
    default = next((r for r in final.rows if r.label == default_label and not r.is_baseline), None)
    return Outcome(
        case=case,
        space=space,
        strategy=strategy.name,
        rows=[*by_label.values(), *baseline_rows],
        final=ordered,
        best=ties[0] if ties else None,
        ties=ties,
        default=default,
        measured=counted,
        uncounted=uncounted,
        failed=failed,
        wall_s=rounds_s + final.wall_s,
        costs=Costs(
            rounds_s=rounds_s,
            final_s=final.wall_s,
            setup_s=setup,
            measure_s=measuring,
            compile_s=compiles.compile_s if compiles.compiling else None,
            compiled=compiles.submitted,
            waited_s=waited,
            strategy_s=thinking,
            configurations=rows_seen,
            workers=len(getattr(sweep.executor, "devices", None) or [1]),
            final_setup_s=sum(r.setup_s or 0.0 for r in final.rows),
            final_measure_s=sum(r.measure_s or 0.0 for r in final.rows),
            final_slowest=max(
                ((r.label, r.setup_s) for r in final.rows if r.setup_s),
                key=lambda pair: pair[1],
                default=None,
            ),
            library_wait_s=final.library_wait_s + apart.library_wait_s,
            apart=tuple(r.label for r in apart.rows),
            apart_s=apart.wall_s,
            first_setup_s=sum(firsts.values()),
            first_workers=len(firsts),
        ),
    )


@dataclasses.dataclass(frozen=True)
class Round:
    """One timed round after the search: its rows, its wall time, and of it the wait for a
    worker that has imported the round's libraries (torch) - the pool's successors."""

    rows: list[ResultRow] = dataclasses.field(default_factory=list)
    wall_s: float = 0.0
    library_wait_s: float = 0.0


def final_round(
    case: Case,
    chosen: tuple[KernelVariant, ...],
    baselines: tuple[str, ...],
    timing: TimingOptions,
    sweep: Sweep,
    compiles: _Compiles,
) -> tuple[Round, Round]:
    """The finalists (`chosen`: the best few, the default) and the baselines timed
    interleaved with the full timing, each row until its median is known to FINAL_PRECISION
    or a quarter of its spread. A baseline that imports a library (torch: 3 to 5 s in a
    fresh process, which a successor does beside the search) is timed apart, after: the
    ranking waits for no import, and the library's rows come when it is in. Apart only while
    the first baseline needs no import (what `vs library` divides by: it stays interleaved
    with the finalists, and the rows timed apart divide by its time too, CaseJob.divide_by_us,
    on whichever GPU has the library) and, as far as the pool has heard, no worker has the
    library yet."""
    final_timing = dataclasses.replace(timing, interleave=True, precision=FINAL_PRECISION)
    awaited = getattr(sweep.executor, "await_successors", None)  # the pool's
    coming = set(getattr(sweep.executor, "coming", lambda: ())()) if awaited is not None else set()
    later = tuple(b for b in baselines if coming & set(CaseJob(case, (), (b,), timing).libraries()))
    if not baselines or baselines[0] in later:  # the first divides `vs library`: it stays
        later = ()
    job = CaseJob(case, chosen, tuple(b for b in baselines if b not in later), final_timing)
    begin = time.monotonic()
    wait = awaited(libraries) if awaited is not None and (libraries := job.libraries()) else 0.0
    compiles.submit([job])
    (rows,) = sweep.run([job], compiles.ready)
    final = Round(rows, time.monotonic() - begin, wait)
    if not later:
        return final, Round()
    begin = time.monotonic()
    first = next((r.time_us for r in rows if r.is_baseline and r.time_us), None)  # vs library's
    apart = CaseJob(case, (), later, final_timing, divide_by_us=first)
    wait = awaited(apart.libraries()) if awaited is not None else 0.0
    (rows,) = sweep.run([apart])
    return final, Round(rows, time.monotonic() - begin, wait)


def plan_searches(
    jobs: list[CaseJob], narrowing: tuple[dict[str, tuple[int, ...]], ...], named: bool
) -> list[tuple[int, SearchSpace]]:
    """(job index, space) for each variant with parameters in each planned job (a plan made
    with `sweep.plan(..., expand=False)`). Over a whole op only the variants with a space are
    searched; a variant named on purpose without one is a TuneError, as is finding none."""
    found = []
    for index, job in enumerate(jobs):
        for variant in job.variants:
            if variant.params or named:
                found.append((index, search_space(variant, job.case.shape, narrowing[index])))
    if not found:
        raise TuneError(
            "no chosen variant has tunable parameters (a header's params:); `cudabench list OP` shows them"
        )
    return found


def _compile_for(variant: KernelVariant, arch: str, dtype: str) -> Any:
    from cudabench.build.compile import compile_variant

    return compile_variant(variant, arch, dtype)


def _uncompiled_for(variants: list[KernelVariant], arch: str, dtype: str) -> list[KernelVariant]:
    from cudabench.build.compile import uncompiled

    return uncompiled(variants, arch, dtype)


def run_searches(
    jobs: list[CaseJob],
    searches: list[tuple[int, SearchSpace]],
    strategies: list[Strategy],
    budget: int,
    timing: TimingOptions,
    sweep: Sweep,
    arch: str | None,
) -> list[Outcome]:
    """Each search in turn on one sweep (one results file). `arch` (e.g. sm_90) turns on
    compiling ahead with nvcc; None for a backend that compiles nothing (the fake)."""
    outcomes = []
    for (index, space), strategy in zip(searches, strategies):
        case = jobs[index].case
        compile_one: Compiler | None = None
        lacking: Uncompiled | None = None
        if arch is not None:
            compile_one = functools.partial(_compile_for, arch=arch, dtype=case.dtype)
            lacking = functools.partial(_uncompiled_for, arch=arch, dtype=case.dtype)
        outcomes.append(
            search(
                case,
                space,
                strategy,
                budget,
                jobs[index].baselines,
                timing,
                sweep,
                compile_one,
                uncompiled=lacking,
            )
        )
    return outcomes
