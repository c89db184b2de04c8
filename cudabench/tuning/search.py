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
               quick search timing (SEARCH_TIMING: a few milliseconds of samples, no NVML
               telemetry), a round's configurations in a few jobs (CHUNK, JOBS_A_ROUND); a
               wrong, crashing or hanging one is a row with its status and the search goes
               on; N/A and SKIPPED (the op rejects the shape, or a block does not fit on
               an SM) do not count against the budget
    final      the best few, the header's default and the library baselines are timed again,
               interleaved, with the full timing; configurations within the noise of the best
               are reported as ties, not ranked

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
from dataclasses import dataclass
from typing import Any

from cudabench.core.records import (
    Case,
    KernelVariant,
    ResultRow,
    Status,
    TimingOptions,
    parse_params,
    split_label,
)
from cudabench.execution.sweep import Sweep
from cudabench.measure.runner import CaseJob
from cudabench.record.stems import now_utc
from cudabench.record.tuning_file import TunedEntry
from cudabench.tuning.strategies import SearchSpace, Strategy, TuneError, search_space

# Search timing: enough samples to rank, short enough that a configuration's timing costs
# little more than its GPU time (H200, reduce at 2^24, an 18 us kernel: 7 ms of timing a
# configuration, docs/guide/tuning.md); the finalists get the full timing
SEARCH_TIMING = {
    "warmup": 1,
    "min_samples": 5,
    "min_time_s": 0.005,
    "max_time_s": 0.5,
    "batch_target_us": 500.0,
    "interleave": False,
    "watch": False,  # NVML's reads: 12 ms of timing a configuration with them, 7 without (H200)
}
FINAL_TOP = 5  # configurations timed again, interleaved, with the full timing
# Configurations per job: at least CHUNK, so that jobs start as soon as their own compiles
# are done; a round in about JOBS_A_ROUND jobs a GPU, so that a worker waits for the parent
# (the rows' bookkeeping, the next job) a few times a round, not every configuration: the
# jobs go out whole (Sweep.run's `whole`), not cut into a configuration each
CHUNK = 4
JOBS_A_ROUND = 8
MIN_TIE = 0.01  # configurations closer than 1% are ties whatever the spread says
UNCOUNTED = (Status.N_A, Status.SKIPPED)


@dataclass(frozen=True)
class Costs:
    """Where a search's wall time went, in seconds. `setup_s` and `measure_s` are summed over
    the search rounds' rows (in the workers, `workers` at a time); the rest of the rounds'
    wall time is the host's: worker round trips, writing the results, the progress bar."""

    rounds_s: float  # the search rounds, wall (the final round apart)
    final_s: float  # the final interleaved round, wall
    setup_s: float  # module load, inputs, float64 reference and tolerance, the first check
    measure_s: float  # warm-up, samples, the check after
    compile_s: float | None  # nvcc, summed over the threads compiling ahead (None: none did)
    waited_s: float  # the sweep waited for a job's own compiles
    strategy_s: float  # the strategy's ask and tell
    configurations: int  # rows of the search rounds
    workers: int
    # the final round's rows: set-up summed (each prepared before any is timed), timing (its
    # samples taken in turn), and the row whose set-up took longest (a library's first call
    # imports it there) - (label, seconds), or None without a final round
    final_setup_s: float = 0.0
    final_measure_s: float = 0.0
    final_slowest: tuple[str, float] | None = None
    # before the final round: the wait for the workers importing its libraries (torch) beside
    # the GPUs' plain workers, which ran the search meanwhile (pool.py's successors)
    library_wait_s: float = 0.0

    @property
    def host_s(self) -> float:
        """The rounds' wall time not spent in a worker's set-up or timing, nor waiting for
        nvcc, nor in the strategy: what the host's side of a configuration costs."""
        busy = (self.setup_s + self.measure_s) / max(1, self.workers)
        return max(0.0, self.rounds_s - busy - self.waited_s - self.strategy_s)

    def per_configuration_ms(self) -> tuple[float, float, float, float]:
        """(wall, set-up, timing, host) per configuration of the search rounds, ms."""
        n = max(1, self.configurations)
        return (
            1e3 * self.rounds_s / n,
            1e3 * self.setup_s / n,
            1e3 * self.measure_s / n,
            1e3 * self.host_s / n,
        )


@dataclass(frozen=True)
class Outcome:
    """What one search found. Rows are the sweep's: every configuration once (the final
    round's measurement for those timed again), then the baselines."""

    case: Case
    space: SearchSpace
    strategy: str
    rows: list[ResultRow]
    final: list[ResultRow]  # the final round, fastest first (baselines included)
    best: ResultRow | None
    ties: list[ResultRow]  # within the noise of the best (the best first)
    default: ResultRow | None  # the header's default configuration, from the final round
    measured: int  # configurations that counted against the budget
    uncounted: int  # N/A and SKIPPED
    failed: int  # FAIL, COMPILE_ERROR, CRASH, TIMEOUT, ERROR
    wall_s: float
    costs: Costs | None = None

    @property
    def speedup_over_default(self) -> float | None:
        if self.best is None or self.default is None or not self.best.time_us:
            return None
        return (self.default.time_us or 0) / self.best.time_us or None


def ties_of(final: list[ResultRow]) -> list[ResultRow]:
    """The timed configurations within the noise of the fastest: their medians differ by
    less than the larger of MIN_TIE and the two rows' mean relative spread (p10..p90)."""
    timed = sorted(
        (r for r in final if r.status is Status.OK and r.time_us and not r.is_baseline),
        key=lambda r: r.time_us or 0,
    )
    if not timed:
        return []
    best = timed[0]
    out = [best]
    for row in timed[1:]:
        noise = max(MIN_TIE, ((best.spread or 0) + (row.spread or 0)) / 2)
        if (row.time_us or 0) <= (best.time_us or 0) * (1 + noise):
            out.append(row)
    return out


Compiler = Callable[[KernelVariant], Any]  # compiles one configuration (the cache keeps it)


class _Compiles:
    """nvcc running ahead of the GPU: each job's configurations are submitted to a thread
    pool as soon as the round is known, and `ready(i)` waits for job i's own."""

    def __init__(self, compile_one: Compiler | None, threads: int) -> None:
        self.compile_one = compile_one
        self.pool = (
            concurrent.futures.ThreadPoolExecutor(max_workers=threads) if compile_one is not None else None
        )
        self.jobs: list[list[concurrent.futures.Future[Any]]] = []
        self.compile_s = 0.0  # nvcc's wall time, summed over the threads
        self.waited_s = 0.0  # the sweep's wait for a job's own compiles
        self._lock = threading.Lock()

    def _timed(self, variant: KernelVariant) -> Any:
        begin = time.perf_counter()
        try:
            return self.compile_one(variant)  # type: ignore[misc]
        finally:
            with self._lock:
                self.compile_s += time.perf_counter() - begin

    def submit(self, jobs: list[CaseJob]) -> None:
        self.jobs = []
        for job in jobs:
            if self.pool is None:
                self.jobs.append([])
                continue
            self.jobs.append([self.pool.submit(self._timed, v) for v in job.variants])

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
) -> Outcome:
    """Run the search (rounds of the strategy on the sweep), then the final round."""
    start = time.monotonic()
    quick = search_timing or dataclasses.replace(timing, **SEARCH_TIMING)  # type: ignore[arg-type]
    compiles = _Compiles(compile_one, threads or os.cpu_count() or 4)
    by_label: dict[str, ResultRow] = {}
    counted = uncounted = failed = 0
    thinking = setup = measuring = 0.0  # the strategy's seconds; the rounds' rows' costs
    rows_seen = 0
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
        final: list[ResultRow] = []
        library_wait = 0.0
        if finalists:
            chosen = tuple(space.variant.configured(values_of(label)) for label in finalists)
            job = CaseJob(case, chosen, baselines, dataclasses.replace(timing, interleave=True))
            awaited = getattr(sweep.executor, "await_successors", None)  # the pool's
            libraries = job.libraries()
            if awaited is not None and libraries:
                library_wait = awaited(libraries)
            compiles.submit([job])
            (final,) = sweep.run([job], compiles.ready)
    finally:
        compiles.close()
    for row in final:
        if not row.is_baseline:
            by_label[row.label] = row
    baseline_rows = [r for r in final if r.is_baseline]
    ordered = sorted(final, key=lambda r: (r.status is not Status.OK, r.time_us or float("inf")))
    ties = ties_of(final)
    default = next((r for r in final if r.label == default_label and not r.is_baseline), None)
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
        wall_s=time.monotonic() - start,
        costs=Costs(
            rounds_s=rounds_s,
            final_s=time.monotonic() - start - rounds_s,
            setup_s=setup,
            measure_s=measuring,
            compile_s=compiles.compile_s if compiles.pool is not None else None,
            waited_s=waited,
            strategy_s=thinking,
            configurations=rows_seen,
            workers=len(getattr(sweep.executor, "devices", None) or [1]),
            final_setup_s=sum(r.setup_s or 0.0 for r in final),
            final_measure_s=sum(r.measure_s or 0.0 for r in final),
            final_slowest=max(
                ((r.label, r.setup_s) for r in final if r.setup_s), key=lambda pair: pair[1], default=None
            ),
            library_wait_s=library_wait,
        ),
    )


def values_of(label: str) -> dict[str, int]:
    """`float4[BLOCK=256,ITEMS=8]` -> {"BLOCK": 256, "ITEMS": 8}."""
    return parse_params(split_label(label)[1])


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
        if arch is not None:
            compile_one = functools.partial(_compile_for, arch=arch, dtype=case.dtype)
        outcomes.append(
            search(case, space, strategy, budget, jobs[index].baselines, timing, sweep, compile_one)
        )
    return outcomes


def entry_of(outcome: Outcome, gpu: str, results: str) -> TunedEntry:
    """The tuning-file entry of a search's best configuration (it must have one)."""
    best = outcome.best
    assert best is not None and best.time_us is not None
    return TunedEntry(
        gpu=gpu,
        op=best.op,
        variant=best.variant,
        dtype=best.dtype,
        shape=best.shape,
        params=values_of(best.label),
        time_us=best.time_us,
        default_time_us=outcome.default.time_us if outcome.default else None,
        strategy=outcome.strategy,
        tuned_at=now_utc(),
        results=results,
        ties=tuple(r.params for r in outcome.ties[1:]),
    )
