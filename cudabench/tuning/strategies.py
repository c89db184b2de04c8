"""What a tuning search may propose, and how it proposes: the space of one variant at one
shape (`search_space`: the header's params and constraints, narrowed by --param, with the
parameters the op's grid rule ignores at this shape held at their default, so no kernel is
timed twice under two names) and the strategies that walk it in rounds (ask: configurations
to measure; tell: their times): exhaustive, random, or Optuna's TPE sampler through its
ask-and-tell interface. tuner.py runs the search.
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass
from typing import Any, Protocol

from cudabench.core.records import KernelVariant
from cudabench.execution.sweep import SweepError
from cudabench.ops.registry import get_op
from cudabench.ops.space import Space, SpaceError, check_overrides

OPTUNA_ROUND = 8  # configurations an Optuna round asks for before hearing their times
STRATEGIES = ("auto", "exhaustive", "random", "optuna")


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
        params = tuple(
            (name, tuple(dict.fromkeys(c[name] for c in self.configs))) for name, _ in self.variant.params
        )
        return Space(params, self.variant.constraints)


def search_space(
    variant: KernelVariant, shape: tuple[int, ...], narrowed: dict[str, tuple[int, ...]] | None = None
) -> SearchSpace:
    """The variant's space at `shape`; TuneError if it has no parameters or none is valid."""
    if not variant.params:
        raise TuneError(
            f"{variant.op} {variant.name} has no tunable parameters (its header "
            "declares no params:); see README, 'Tuning'"
        )
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
    )
    space = Space(params, variant.constraints)
    try:
        configs = space.valid()
    except SpaceError as exc:
        raise TuneError(str(exc)) from None
    if not configs:
        raise TuneError(
            f"no configuration of {variant.name} satisfies its constraints "
            f"({'; '.join(variant.constraints)}) with these values"
        )
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
        self.study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
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
        from cudabench.core.names import did_you_mean

        raise TuneError(
            f"--strategy {name!r}: not one of {', '.join(STRATEGIES)}{did_you_mean(name, list(STRATEGIES))}"
        )
    if name == "auto":
        name = "exhaustive" if space.size <= budget else "optuna" if optuna_available() else "random"
    if name == "optuna":
        if not optuna_available():
            raise TuneError("--strategy optuna needs Optuna: pip install 'cudabench[tune]'")
        return OptunaSearch(space, seed)
    return RandomOrder(space, seed) if name == "random" else Exhaustive(space, seed)
