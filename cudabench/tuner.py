"""`cudabench tune`: search a variant's launch-parameter space for its fastest correct
configuration at one shape and dtype, through the same sweep as `run` (sweep.Sweep: the
worker pool, validation, time-outs, every row saved as it ends, Ctrl-C keeping them).

    space      the header's params and constraints (space.py), narrowed by --param, with the
               parameters the op's grid rule ignores at this shape (`op.unused_params`) held
               at their default, so no kernel is timed twice under two names
    strategy   proposes configurations in rounds (ask) and hears their times (tell):
               exhaustive, random, or a model-based sampler from Optuna (ask-and-tell)
    compile    each round's configurations are compiled by nvcc in parallel in this process
               (threads, each running nvcc; the cache is keyed on the -D definitions) while
               the GPU measures: a job goes to a worker once its own cubins are ready
    measure    every configuration is validated against the float64 reference and timed with
               quick search timing; a wrong, crashing or hanging one is a row with its status
               and the search goes on; N/A and SKIPPED (the op rejects the shape, or a block
               does not fit on an SM) do not count against the budget
    final      the best few, the header's default and the library baselines are timed again,
               interleaved, with the full timing; configurations within the noise of the best
               are reported as ties, not ranked

Nothing here prints: the CLI (cli/tune_cmd.py) renders the Outcome.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import importlib.util
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cudabench.ops import get_op
from cudabench.runner import CaseJob
from cudabench.space import Space, SpaceError, check_overrides
from cudabench.spec import (
    Case,
    KernelVariant,
    ResultRow,
    Status,
    TimingOptions,
    parse_params,
    split_label,
)  # fmt: skip
from cudabench.sweep import Sweep, SweepError
from cudabench.tuning import TunedEntry

# Search timing: enough samples to rank, short enough that 200 configurations take seconds.
SEARCH_TIMING = {"warmup": 2, "min_samples": 5, "min_time_s": 0.02, "max_time_s": 0.5,
                 "interleave": False}  # fmt: skip
FINAL_TOP = 5  # configurations timed again, interleaved, with the full timing
CHUNK = 4  # configurations per job: jobs start as soon as their own compiles are done
OPTUNA_ROUND = 8  # configurations an Optuna round asks for before hearing their times
MIN_TIE = 0.01  # configurations closer than 1% are ties whatever the spread says
STRATEGIES = ("auto", "exhaustive", "random", "optuna")
UNCOUNTED = (Status.N_A, Status.SKIPPED)


class TuneError(SweepError):
    """Bad usage for tune (no parameters, an empty space, an unknown strategy): one line."""


@dataclass(frozen=True)
class SearchSpace:
    """The configurations a search may propose, for one variant at one shape."""

    variant: KernelVariant  # at the header's default configuration
    configs: tuple[dict[str, int], ...]  # valid and distinct, the default first (if valid)
    full_size: int  # before the constraints and the held parameters
    held: tuple[str, ...]  # parameters the op ignores at this shape, held at their default

    @property
    def size(self) -> int:
        return len(self.configs)

    @property
    def space(self) -> Space:
        """The parameters with the values the search ranges over."""
        params = tuple((name, tuple(dict.fromkeys(c[name] for c in self.configs)))
                       for name, _ in self.variant.params)  # fmt: skip
        return Space(params, self.variant.constraints)


def search_space(variant: KernelVariant, shape: tuple[int, ...],
                 narrowed: dict[str, tuple[int, ...]] | None = None) -> SearchSpace:  # fmt: skip
    """The variant's space at `shape`; TuneError if it has no parameters or none is valid."""
    if not variant.params:
        raise TuneError(f"{variant.op} {variant.name} has no tunable parameters (its header "
                        "declares no params:); see README, 'Tuning'")  # fmt: skip
    narrowed = dict(narrowed or {})
    try:
        check_overrides(variant, narrowed)
    except SpaceError as exc:
        raise TuneError(str(exc)) from None
    declared = dict(variant.params)
    variant = variant.configured({name: values[0] for name, values in variant.params})
    op = get_op(variant.op)
    unused = getattr(op, "unused_params", lambda shape: ())(shape)
    default = dict(variant.values)  # the header's: each parameter's first value
    held = tuple(n for n in declared if n in unused and n not in narrowed)
    params = tuple(
        (name, (default[name],) if name in held else narrowed.get(name, values))
        for name, values in variant.params
    )  # fmt: skip
    space = Space(params, variant.constraints)
    try:
        configs = space.valid()
    except SpaceError as exc:
        raise TuneError(str(exc)) from None
    if not configs:
        raise TuneError(f"no configuration of {variant.name} satisfies its constraints "
                        f"({'; '.join(variant.constraints)}) with these values")  # fmt: skip
    if default in configs:  # the default first: the search always has it to compare with
        configs.remove(default)
        configs.insert(0, default)
    return SearchSpace(variant, tuple(configs), Space(variant.params).full_size, held)


class Strategy(Protocol):
    """Proposes configurations (ask: up to `count`, [] when it has nothing left) and hears
    each one's median time, or None when it failed (tell)."""

    name: str

    def ask(self, count: int) -> list[dict[str, int]]: ...

    def tell(self, config: dict[str, int], time_us: float | None) -> None: ...


class Exhaustive:
    """Every configuration, the default first, in the header's order."""

    name = "exhaustive"

    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        self.queue = list(space.configs)

    def ask(self, count: int) -> list[dict[str, int]]:
        taken, self.queue = self.queue[:count], self.queue[count:]
        return taken

    def tell(self, config: dict[str, int], time_us: float | None) -> None:
        pass


class RandomOrder(Exhaustive):
    """Distinct configurations in a random order (seeded), the default first."""

    name = "random"

    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        first, rest = list(space.configs[:1]), list(space.configs[1:])
        random.Random(seed).shuffle(rest)
        self.queue = first + rest


class OptunaSearch:
    """Optuna's TPE sampler through its ask-and-tell interface: each round asks for
    OPTUNA_ROUND configurations, the pool measures them, their times are told back. A
    configuration the constraints forbid, or one already measured, is told without running
    (pruned, or its known time), so the budget counts distinct kernels. The default is
    enqueued first."""

    name = "optuna"

    def __init__(self, space: SearchSpace, seed: int = 0) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.space = space
        self.valid = {tuple(sorted(c.items())) for c in space.configs}
        self.values = {name: list(values) for name, values in space.space.params}
        self.study = optuna.create_study(direction="minimize",
                                         sampler=optuna.samplers.TPESampler(seed=seed))  # fmt: skip
        self.study.enqueue_trial(dict(space.configs[0]))
        self.known: dict[tuple[tuple[str, int], ...], float | None] = {}
        self.open: dict[tuple[tuple[str, int], ...], list[Any]] = {}
        self.tries = 0

    def ask(self, count: int) -> list[dict[str, int]]:
        proposed: list[dict[str, int]] = []
        limit = self.tries + 50 * max(count, 1) + len(self.valid)
        while len(proposed) < min(count, OPTUNA_ROUND) and len(self.known) + len(proposed) < len(self.valid):
            if self.tries > limit:
                break  # the sampler keeps proposing what is measured: the space is spent
            self.tries += 1
            trial = self.study.ask()
            config = {n: trial.suggest_categorical(n, v) for n, v in self.values.items()}
            key = tuple(sorted(config.items()))
            if key not in self.valid:
                self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
            elif key in self.known:
                self._tell(trial, self.known[key])
            elif key in self.open:  # proposed twice in one round: one run answers both
                self.open[key].append(trial)
            else:
                self.open[key] = [trial]
                proposed.append(config)
        return proposed

    def _tell(self, trial: Any, time_us: float | None) -> None:
        if time_us is None:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, time_us)

    def tell(self, config: dict[str, int], time_us: float | None) -> None:
        key = tuple(sorted(config.items()))
        self.known[key] = time_us
        for trial in self.open.pop(key, []):
            self._tell(trial, time_us)


def optuna_available() -> bool:
    return importlib.util.find_spec("optuna") is not None


def make_strategy(name: str, space: SearchSpace, budget: int, seed: int = 0) -> Strategy:
    """`auto`: exhaustive when the space fits the budget, else Optuna (random without it)."""
    if name not in STRATEGIES:
        from cudabench.ops import closest

        raise TuneError(f"--strategy {name!r}: not one of {', '.join(STRATEGIES)}"
                        f"{closest(name, list(STRATEGIES))}")  # fmt: skip
    if name == "auto":
        name = "exhaustive" if space.size <= budget else "optuna" if optuna_available() else "random"
    if name == "optuna":
        if not optuna_available():
            raise TuneError("--strategy optuna needs Optuna: pip install 'cudabench[tune]'")
        return OptunaSearch(space, seed)
    return RandomOrder(space, seed) if name == "random" else Exhaustive(space, seed)


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

    @property
    def speedup_over_default(self) -> float | None:
        if self.best is None or self.default is None or not self.best.time_us:
            return None
        return (self.default.time_us or 0) / self.best.time_us or None


def ties_of(final: list[ResultRow]) -> list[ResultRow]:
    """The timed configurations within the noise of the fastest: their medians differ by
    less than the larger of MIN_TIE and the two rows' mean relative spread (p10..p90)."""
    timed = sorted((r for r in final if r.status is Status.OK and r.time_us and not r.is_baseline),
                   key=lambda r: r.time_us or 0)  # fmt: skip
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
        self.pool = (concurrent.futures.ThreadPoolExecutor(max_workers=threads)
                     if compile_one is not None else None)  # fmt: skip
        self.jobs: list[list[concurrent.futures.Future[Any]]] = []

    def submit(self, jobs: list[CaseJob]) -> None:
        self.jobs = []
        for job in jobs:
            if self.pool is None:
                self.jobs.append([])
                continue
            self.jobs.append([self.pool.submit(self.compile_one, v) for v in job.variants])  # type: ignore[arg-type]

    def ready(self, index: int) -> None:
        for future in self.jobs[index] if index < len(self.jobs) else []:
            try:
                future.result()
            except Exception:  # the worker compiles it again and makes the row say why
                pass

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def search(case: Case, space: SearchSpace, strategy: Strategy, budget: int,
           baselines: tuple[str, ...], timing: TimingOptions, sweep: Sweep,
           compile_one: Compiler | None = None, threads: int | None = None,
           search_timing: TimingOptions | None = None) -> Outcome:  # fmt: skip
    """Run the search (rounds of the strategy on the sweep), then the final round."""
    start = time.monotonic()
    quick = search_timing or dataclasses.replace(timing, **SEARCH_TIMING)  # type: ignore[arg-type]
    compiles = _Compiles(compile_one, threads or os.cpu_count() or 4)
    by_label: dict[str, ResultRow] = {}
    counted = uncounted = failed = 0
    try:
        while counted < budget:
            configs = strategy.ask(budget - counted)
            if not configs:
                break
            variants = [space.variant.configured(c) for c in configs]
            jobs = [CaseJob(case, tuple(variants[i:i + CHUNK]), (), quick)
                    for i in range(0, len(variants), CHUNK)]  # fmt: skip
            compiles.submit(jobs)
            results = sweep.run(jobs, compiles.ready)
            rows = {r.label: r for job_rows in results for r in job_rows}
            for config, variant in zip(configs, variants):
                row = rows.get(variant.label)
                ok = row is not None and row.status is Status.OK and row.time_us
                strategy.tell(config, row.time_us if ok else None)  # type: ignore[union-attr]
                if row is None:
                    continue
                by_label[row.label] = row
                if row.status in UNCOUNTED:
                    uncounted += 1
                else:
                    counted += 1
                    failed += row.status.is_failure
        ranked = sorted((r for r in by_label.values() if r.status is Status.OK and r.time_us),
                        key=lambda r: r.time_us or 0)  # fmt: skip
        finalists = [r.label for r in ranked[:FINAL_TOP]]
        # the header's default configuration, searched or not (--param may leave it out):
        # what `run` uses without a tuning file, so what the best is compared with
        default_label = space.variant.label
        searched = by_label.get(default_label)
        if default_label not in finalists and (searched is None or searched.status is Status.OK):
            finalists.append(default_label)
        final: list[ResultRow] = []
        if finalists:
            chosen = tuple(space.variant.configured(values_of(label)) for label in finalists)
            job = CaseJob(case, chosen, baselines, dataclasses.replace(timing, interleave=True))
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
        case=case, space=space, strategy=strategy.name,
        rows=[*by_label.values(), *baseline_rows], final=ordered,
        best=ties[0] if ties else None, ties=ties, default=default,
        measured=counted, uncounted=uncounted, failed=failed,
        wall_s=time.monotonic() - start,
    )  # fmt: skip


def values_of(label: str) -> dict[str, int]:
    """`float4[BLOCK=256,ITEMS=8]` -> {"BLOCK": 256, "ITEMS": 8}."""
    return parse_params(split_label(label)[1])


def plan_searches(jobs: list[CaseJob], narrowing: tuple[dict[str, tuple[int, ...]], ...],
                  named: bool) -> list[tuple[int, SearchSpace]]:  # fmt: skip
    """(job index, space) for each variant with parameters in each planned job (a plan made
    with `sweep.plan(..., expand=False)`). Over a whole op only the variants with a space are
    searched; a variant named on purpose without one is a TuneError, as is finding none."""
    found = []
    for index, job in enumerate(jobs):
        for variant in job.variants:
            if variant.params or named:
                found.append((index, search_space(variant, job.case.shape, narrowing[index])))
    if not found:
        raise TuneError("no chosen variant has tunable parameters (a header's params:); "
                        "`cudabench list OP` shows them")  # fmt: skip
    return found


def _compile_for(variant: KernelVariant, arch: str, dtype: str) -> Any:
    from cudabench.compile import compile_variant

    return compile_variant(variant, arch, dtype)


def run_searches(jobs: list[CaseJob], searches: list[tuple[int, SearchSpace]],
                 strategies: list[Strategy], budget: int, timing: TimingOptions, sweep: Sweep,
                 arch: str | None) -> list[Outcome]:  # fmt: skip
    """Each search in turn on one sweep (one results file). `arch` (e.g. sm_90) turns on
    compiling ahead with nvcc; None for a backend that compiles nothing (the fake)."""
    outcomes = []
    for (index, space), strategy in zip(searches, strategies):
        case = jobs[index].case
        compile_one: Compiler | None = None
        if arch is not None:
            compile_one = functools.partial(_compile_for, arch=arch, dtype=case.dtype)
        outcomes.append(search(case, space, strategy, budget, jobs[index].baselines, timing,
                               sweep, compile_one))  # fmt: skip
    return outcomes


def entry_of(outcome: Outcome, gpu: str, results: str) -> TunedEntry:
    """The tuning-file entry of a search's best configuration (it must have one)."""
    from cudabench.results import now_utc

    best = outcome.best
    assert best is not None and best.time_us is not None
    return TunedEntry(
        gpu=gpu, op=best.op, variant=best.variant, dtype=best.dtype, shape=best.shape,
        params=values_of(best.label), time_us=best.time_us,
        default_time_us=outcome.default.time_us if outcome.default else None,
        strategy=outcome.strategy, tuned_at=now_utc(), results=results,
        ties=tuple(r.params for r in outcome.ties[1:]),
    )  # fmt: skip
