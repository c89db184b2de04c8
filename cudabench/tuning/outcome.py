"""What a search found, as records: where its time went (`Costs`), its `Outcome` (every
configuration's row, the final round, the best and its ties), and the tuning-file entry of
its best configuration. tuning/search.py makes them; the CLI renders them."""

from __future__ import annotations

from dataclasses import dataclass

from cudabench.core.records import Case, ResultRow, Status, parse_params, split_label
from cudabench.record.stems import now_utc
from cudabench.record.tuning_file import TunedEntry
from cudabench.tuning.strategies import SearchSpace

MIN_TIE = 0.01  # configurations closer than 1% are ties whatever the spread says


@dataclass(frozen=True)
class Costs:
    """Where a search's wall time went, in seconds. `setup_s` and `measure_s` are summed over
    the search rounds' rows (in the workers, `workers` at a time); the rest of the rounds'
    wall time is the host's: worker round trips, writing the results, the progress bar."""

    rounds_s: float  # the search rounds, wall (the final round apart)
    final_s: float  # the final interleaved round, wall (the baselines timed apart after it not)
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
    # the wait for the workers importing the libraries (torch) beside the GPUs' plain
    # workers, which ran the search meanwhile (pool.py's successors): before the final round,
    # or, where its library baselines were timed apart, before those
    library_wait_s: float = 0.0
    # the baselines timed apart, after the final round, while their library was still being
    # imported (search.final_round), and that round's wall time, its wait included
    apart: tuple[str, ...] = ()
    apart_s: float = 0.0
    # each worker's first configuration of the search: its set-up summed (of `setup_s`), and
    # how many. A process's first one pays what later ones do not (the case's inputs and
    # reference, CuPy's first kernels): 0.1 s against 1 to 2 ms on an H200 (0.5 s while CuPy's
    # lazy import of cupyx fell there), once a worker, so it is what no number of GPUs divides
    first_setup_s: float = 0.0
    first_workers: int = 0
    compiled: int = 0  # configurations nvcc compiled ahead (not in the compile cache)

    @property
    def host_s(self) -> float:
        """The rounds' wall time not spent in a worker's set-up or timing, nor waiting for
        nvcc, nor in the strategy: what the host's side of a configuration costs."""
        busy = (self.setup_s + self.measure_s) / max(1, self.workers)
        return max(0.0, self.rounds_s - busy - self.waited_s - self.strategy_s)

    def per_configuration_ms(self) -> tuple[float, float, float, float]:
        """(wall, set-up, timing, host) per configuration of the search rounds, ms; the
        set-up that of the configurations after each worker's first (`first_setup_s`)."""
        n = max(1, self.configurations)
        later = max(1, self.configurations - self.first_workers)
        return (
            1e3 * self.rounds_s / n,
            1e3 * (self.setup_s - self.first_setup_s) / later,
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
    final: list[ResultRow]  # the final round and any baselines timed apart, fastest first
    best: ResultRow | None
    ties: list[ResultRow]  # within the noise of the best (the best first)
    default: ResultRow | None  # the header's default configuration, from the final round
    measured: int  # configurations that counted against the budget
    uncounted: int  # N/A and SKIPPED
    failed: int  # FAIL, COMPILE_ERROR, CRASH, TIMEOUT, ERROR
    wall_s: float  # the search: its rounds and the final round (baselines timed apart: Costs)
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


def values_of(label: str) -> dict[str, int]:
    """`float4[BLOCK=256,ITEMS=8]` -> {"BLOCK": 256, "ITEMS": 8}."""
    return parse_params(split_label(label)[1])


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
