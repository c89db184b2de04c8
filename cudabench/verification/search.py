"""The search for the smallest shape where one variant is wrong, within a time budget.

    edges    the domain's edge shapes (domain.py), smallest first, in rounds of `batch`
             shapes (a round's jobs spread over the GPUs); the first round with a wrong shape
             ends the phase: its smallest wrong shape is the smallest wrong edge shape
    random   when every edge shape was right: Hypothesis draws shapes over the domain
             (`draw_shapes`: ranks, then each dim from its edge values, small integers or a
             log-uniform size) and, on the first wrong one, shrinks it with its own passes;
             up to `examples` draws
    shrink   the wrong shape found, made smaller one step at a time (`Domain.smaller`: each
             dim halved, lowered by a power of two, or cut to its remainder modulo the warp,
             the vector width or a block) until no smaller step is wrong: every dim's half
             was then checked right, so, where a dim's failures do not come and go below it,
             the shape is no larger than twice the smallest wrong one

The oracle answers a list of shapes with one `Probe` each (its status and the row). Wrong is
FAIL, CRASH, TIMEOUT or ERROR; N/A and SKIPPED are not tried (not wrong, not counted); a
COMPILE_ERROR ends the search (no shape can be right). Known shapes are never asked twice.
The budget is checked before every round: a round under way finishes (a TIMEOUT row costs the
pool's --timeout), so the search may pass its budget by one round.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cudabench.core.records import KernelVariant, ResultRow, Shape, Status
from cudabench.verification.domain import Domain, Limits, order, size

WRONG = (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.ERROR)
UNTRIED = (Status.N_A, Status.SKIPPED)
BATCH = 1  # shapes a round, smallest first (the use case: one a GPU)
EXAMPLES = 100  # random draws at most
RANDOM_BITS = 30  # the random phase draws up to 2^30 elements (the edges go past 2^31)

VERIFIED, WRONG_AT, BROKEN, UNTESTED = "verified", "wrong", "does not compile", "untested"
NO_SHAPE = "no shape within the variant's domain and the card's memory"
NOT_HERE = "not on this machine"  # the GPU or a module it needs rules every shape out: not searched


@dataclass(frozen=True)
class Probe:
    """One shape checked: its status and the row that says why."""

    shape: Shape
    status: Status
    row: ResultRow | None = None

    @property
    def wrong(self) -> bool:
        return self.status in WRONG

    @property
    def ran(self) -> bool:
        return self.status is Status.OK or self.wrong

    @property
    def detail(self) -> str:
        return self.row.error if self.row is not None else ""


Oracle = Callable[[list[Shape]], list[Probe]]


@dataclass(frozen=True)
class Verdict:
    """What the search found for one variant in one dtype."""

    state: str  # verified, wrong, does not compile, untested, not on this machine
    tried: int  # shapes that ran (right or wrong)
    untried: int  # shapes the variant declared N/A or that were skipped
    smallest: Shape | None  # of the shapes that ran
    largest: Shape | None
    wrong: Probe | None  # the smallest wrong shape found, after shrinking
    found: Probe | None  # where it was found first (before shrinking)
    phase: str  # where it was found: edge or random ('' if not)
    complete: bool  # False when the budget ran out before the search ended
    elapsed_s: float
    broken: Probe | None = None  # the COMPILE_ERROR row's probe
    untried_why: str = ""  # why it is untested or not here (the first N/A or SKIPPED row's reason)

    @property
    def is_wrong(self) -> bool:
        return self.state in (WRONG_AT, BROKEN)


class Search:
    """One variant's search (`run()` gives the Verdict); `clock` is time.monotonic unless a
    test scripts it; `known`: probes made before the budget started (the use case's first
    checks of each variant), never asked again. A variant the machine cannot run at all
    (Domain.unavailable) is not searched: NOT_HERE."""

    def __init__(
        self,
        domain: Domain,
        oracle: Oracle,
        budget_s: float,
        examples: int = EXAMPLES,
        seed: int = 0,
        batch: int = BATCH,
        clock: Callable[[], float] = time.monotonic,
        known: Iterable[Probe] = (),
    ) -> None:
        self.domain, self.oracle, self.examples, self.seed = domain, oracle, examples, seed
        self.batch, self.clock = max(1, batch), clock
        self.start = clock()
        self.deadline = self.start + budget_s
        self.known: dict[Shape, Probe] = {p.shape: p for p in known}  # checked before the budget
        broken = [p for p in self.known.values() if p.status is Status.COMPILE_ERROR]
        self.broken: Probe | None = broken[0] if broken else None
        self.out_of_time = False

    # ------------------------------------------------------------------ asking the oracle

    def time_left(self) -> bool:
        if self.clock() >= self.deadline:
            self.out_of_time = True
        return not self.out_of_time

    def check(self, shapes: list[Shape]) -> list[Probe]:
        """The probes of `shapes` (asked once each, in rounds of `batch`), while the budget
        lasts and the variant compiles; shapes not reached have no probe."""
        probes = [self.known[s] for s in shapes if s in self.known]
        new = list(dict.fromkeys(s for s in shapes if s not in self.known))
        for start in range(0, len(new), self.batch):
            if self.broken is not None or not self.time_left():
                break
            for probe in self.oracle(new[start : start + self.batch]):
                self.known[probe.shape] = probe
                probes.append(probe)
                if probe.status is Status.COMPILE_ERROR:
                    self.broken = probe
        return probes

    def first_wrong(self, shapes: list[Shape]) -> Probe | None:
        """The smallest wrong shape of the first round (smallest shapes first) with one."""
        for start in range(0, len(shapes), self.batch):
            wrong = [p for p in self.check(shapes[start : start + self.batch]) if p.wrong]
            if wrong:
                return min(wrong, key=lambda p: order(p.shape))
            if self.broken is not None or self.out_of_time:
                return None
        return None

    # ------------------------------------------------------------------ the phases

    def edges(self) -> Probe | None:
        return self.first_wrong(self.domain.edges())

    def randomized(self) -> Probe | None:
        """Hypothesis's search: draws over the domain, each checked as it is drawn, and the
        first wrong one shrunk by Hypothesis; None when no draw was wrong."""
        from hypothesis import HealthCheck, Phase, Verbosity, find, settings
        from hypothesis.errors import HypothesisException

        def wrong(shape: Shape) -> bool:
            if shape not in self.known and (self.broken is not None or not self.time_left()):
                return False
            probes = self.check([shape])
            return bool(probes) and probes[0].wrong

        try:
            found = find(
                draw_shapes(self.domain),
                wrong,
                settings=settings(
                    max_examples=self.examples,
                    deadline=None,
                    database=None,
                    phases=(Phase.generate, Phase.shrink),
                    suppress_health_check=list(HealthCheck),
                    verbosity=Verbosity.quiet,
                ),
                random=random.Random(self.seed),
            )
        except HypothesisException:  # no draw was wrong (NoSuchExample), or none allowed
            return None
        probe = self.known.get(found)
        return probe if probe is not None and probe.wrong else None

    def shrink(self, probe: Probe) -> Probe:
        """Smaller steps (Domain.smaller) while one of them is wrong, the smallest wrong
        step taken each time."""
        best = probe
        while self.broken is None and self.time_left():
            steps = [s for s in self.domain.smaller(best.shape) if s not in self.known]
            wrong = self.first_wrong(steps)
            known = [p for p in self.known.values() if p.wrong and order(p.shape) < order(best.shape)]
            candidates = [p for p in [wrong, *known] if p is not None]
            if not candidates:
                break
            best = min(candidates, key=lambda p: order(p.shape))
        return best

    def run(self) -> Verdict:
        why = self.domain.unavailable
        if why:
            return dataclasses.replace(self.verdict(None, None, ""), state=NOT_HERE, untried_why=why)
        found, phase = self.edges(), "edge"
        if found is None and self.broken is None and not self.out_of_time:
            found, phase = self.randomized(), "random"
        smallest = self.shrink(found) if found is not None else None
        return self.verdict(found, smallest, phase if found is not None else "")

    @staticmethod
    def _why_untried(untried: list[Probe]) -> str:
        """The smallest untried shape's reason, or why none was tried."""
        return min(untried, key=lambda p: order(p.shape)).detail if untried else NO_SHAPE

    def verdict(self, found: Probe | None, smallest: Probe | None, phase: str) -> Verdict:
        ran = sorted((p.shape for p in self.known.values() if p.ran), key=order)
        untried = [p for p in self.known.values() if p.status in UNTRIED]
        if self.broken is not None:
            state = BROKEN
        elif smallest is not None:
            state = WRONG_AT
        else:
            state = VERIFIED if ran else UNTESTED
        return Verdict(
            state=state,
            tried=len(ran),
            untried=len(untried),
            smallest=ran[0] if ran else None,
            largest=ran[-1] if ran else None,
            wrong=smallest,
            found=found,
            phase=phase,
            complete=not self.out_of_time,
            elapsed_s=self.clock() - self.start,
            broken=self.broken,
            untried_why=self._why_untried(untried) if state == UNTESTED else "",
        )


def draw_shapes(domain: Domain) -> Any:
    """The Hypothesis strategy of shapes over a domain: a rank the op takes, then each dim
    from its edge values, a small integer, or a log-uniform size (the dims' sizes sharing
    RANDOM_BITS and the memory), rounded up to a declared multiple; shapes the domain does not
    allow are rejected. Hypothesis shrinks toward the first rank, the first (smallest) edge
    values and small sizes."""
    from hypothesis import assume
    from hypothesis import strategies as st

    values = {d: domain.values(d) for r in domain.ranks for d in domain.names(r)}

    @st.composite
    def shapes(draw: Any) -> Shape:
        rank = draw(st.sampled_from(domain.ranks))
        names = domain.names(rank)
        bits_left = RANDOM_BITS
        shape = []
        for dim in names:
            limits = domain.limits.get(dim, Limits())
            top = max(0, min(bits_left, int(math.log2(max(1, limits.high)))))
            bits = draw(st.integers(0, top))
            choice = draw(
                st.one_of(
                    st.sampled_from(values[dim] or [1]),
                    st.integers(1, 64),
                    st.integers(2**bits, 2 ** (bits + 1) - 1),
                )
            )
            value = limits.project(choice)
            assume(value is not None)
            assert value is not None
            bits_left = max(0, bits_left - max(0, value.bit_length() - 1))
            shape.append(value)
        result = tuple(shape)
        assume(domain.allows(result))
        return result

    return shapes()


def within(shape: Shape, smallest: Shape, factor: float = 2.0) -> bool:
    """Whether `shape` is no larger than `factor` times `smallest` (by size)."""
    return size(shape) <= factor * size(smallest)


@dataclass(frozen=True)
class VariantVerdict:
    """One variant's verdict in one dtype, and how to see its wrong shape again."""

    op: str
    variant: KernelVariant
    dtype: str
    verdict: Verdict
    reproduce: str  # `cudabench run OP -s SHAPE -v VARIANT ...` ('' unless wrong at a shape)

    @property
    def label(self) -> str:
        return self.variant.label

    @property
    def wrong_row(self) -> ResultRow | None:
        probe = self.verdict.wrong or self.verdict.broken
        return probe.row if probe is not None else None
