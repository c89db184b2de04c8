"""Planning: a target (op name or config file) and the command's typed options -> the jobs of
one command (`CaseJob`s: one case, its variants and baselines, its timing), before any GPU is
touched. The tuning file's configurations are applied later, once the GPU model is known
(`apply_tuned`, called by the session). Bad usage is a `SweepError` (one line).

`plan()` takes values, not text: shapes as tuples, launch parameters as
{"BLOCK": (128, 256)}, dtypes as `DType` records or their names. Text is read at the edges:
the CLI (`--shape 2^24`, `--param BLOCK=128,256`), the Python API and config files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudabench.backends import backend_name
from cudabench.backends.clocklock import parse_clocks
from cudabench.backends.cupti_clock import TIMERS
from cudabench.build.nvcc import ToolchainError, nvcc_path
from cudabench.core.dtypes import ALL, DTYPES, DType, UnknownDType, get_dtype
from cudabench.core.errors import SweepError
from cudabench.core.names import UnknownName, closest, did_you_mean
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, KernelVariant, Shape
from cudabench.core.shapes import shape_text
from cudabench.core.timing import TimingOptions
from cudabench.execution.config import BenchConfig, Benchmark, ConfigError, builtin_config, load_config
from cudabench.measure.problem import FILLS
from cudabench.measure.runner import CaseJob
from cudabench.measure.telemetry import SETTLE
from cudabench.ops import registry
from cudabench.ops.discovery import discover, user_roots
from cudabench.ops.registry import get_op
from cudabench.ops.space import Space, SpaceError, grid
from cudabench.record import tuning_file


@dataclass(frozen=True)
class Plan:
    """The jobs of one command, and the kernel files that could not be loaded."""

    jobs: list[CaseJob]
    problems: list[str]
    timing: TimingOptions
    notes: tuple[str, ...] = ()  # what the plan left out and why (no variant in a dtype)
    pinned: tuple[str, ...] = ()  # parameters set by --param (a tuned configuration keeps them)
    # plan(..., expand=False), for tune: per job, the --param / config `params:` values that
    # narrow each variant's space (the variants themselves stay at their defaults)
    narrowing: tuple[dict[str, tuple[int, ...]], ...] = ()

    @property
    def op_label(self) -> str:
        return "+".join(dict.fromkeys(job.case.op for job in self.jobs))

    @property
    def rows_expected(self) -> int:
        return sum(len(job.variants) + len(job.baselines) for job in self.jobs)


def job_libraries(jobs: Sequence[CaseJob]) -> tuple[str, ...]:
    """The Python libraries the jobs import on their first call (CaseJob.libraries: torch for
    a torch baseline, triton and torch for a Triton variant): each GPU's successor imports
    them beside the plain worker instead of in the first row that calls one (4.5 s for torch
    on an H200 machine), and the jobs that need them wait for it (execution/successors.py)."""
    return tuple(dict.fromkeys(library for job in jobs for library in job.libraries()))


def kernel_roots(kernels: Sequence[Path] | None) -> list[Path]:
    """The built-in kernels folder and the user's --kernels folders."""
    try:
        return [BUILTIN_KERNELS, *user_roots(list(kernels or []))]
    except FileNotFoundError as exc:
        raise SweepError(str(exc)) from None


def choose(
    variants: list[KernelVariant], names: list[str] | None, baselines: list[str]
) -> tuple[list[KernelVariant], list[str]]:
    """The variants (and baselines) named; all of them when none is named. Baselines always
    run unless named otherwise: speedups need them."""
    if not names:
        return variants, baselines
    known = {v.name: v for v in variants}
    for name in names:
        if name not in known and name not in baselines:
            raise SweepError(f"unknown variant {name!r}{closest(name, sorted(known) + baselines)}")
    return [known[n] for n in dict.fromkeys(names) if n in known], baselines


def check_target(
    target: str, ops: Sequence[Path] | None = None, shapes: Sequence[Shape] | None = None
) -> None:
    """The op folders in use (`ops`: --ops), and a SweepError (one line) where `target` is
    neither an existing config file nor an op, or an op that does not take one of `shapes`
    (--shape): the user's typo, said before anything slow and before what needs a GPU
    (flow.preflight probes the driver after this)."""
    try:
        registry.use_ops(list(ops) if ops else None)
    except registry.OpsFolderError as exc:
        raise SweepError(str(exc)) from None
    path = Path(target)
    try:
        if target.endswith((".yaml", ".yml")) and not path.is_file():
            load_config(path)  # its "no such config file"
        elif not path.is_file():
            op = get_op(target)
            for shape in shapes or ():
                _takes(op, shape)
    except (ConfigError, UnknownName) as exc:
        raise SweepError(str(exc)) from exc


def _takes(op: Any, shape: Shape) -> None:
    """SweepError (one line, as the plan words it) when the op does not take the shape."""
    try:
        op.check_shape(shape)
    except ValueError as exc:
        raise SweepError(f"shape {shape_text(shape)}: {exc}") from exc


def _config_for(target: str, shapes: Sequence[Shape] | None) -> BenchConfig:
    """A config file, or an op name with --shape (default: configs/<op>.yaml's shapes)."""
    path = Path(target)
    if target.endswith((".yaml", ".yml")) or path.is_file():
        config = load_config(path)
    else:
        try:
            op = get_op(target)
        except UnknownName as exc:
            raise SweepError(str(exc)) from exc
        if shapes:
            return BenchConfig((Benchmark(op.name, ()),), TimingOptions(), "command line")
        default = builtin_config(op.name)
        if not default.is_file():
            raise SweepError(f"no --shape given and no {default} for {op.name!r}")
        config = load_config(default)
        config = dataclasses.replace(
            config, benchmarks=tuple(b for b in config.benchmarks if b.op == op.name)
        )
    return config


def _dtypes(asked: Sequence[str | DType], chosen: list[KernelVariant]) -> list[DType]:
    """The dtypes to run: the asked ones (records, or names), `all` standing for every dtype
    the chosen variants declare (float32 first); an unknown name is a SweepError with a
    did-you-mean."""
    found: list[DType] = []
    for asked_one in asked:
        if isinstance(asked_one, DType):
            found.append(asked_one)
        elif asked_one == ALL:
            found += [d for name, d in DTYPES.items() if any(name in v.dtypes for v in chosen)]
        else:
            try:
                found.append(get_dtype(asked_one))
            except UnknownDType as exc:
                raise SweepError(f"--dtype: {exc}") from exc
    return list(dict.fromkeys(found))


def _grid(params: Mapping[str, Sequence[int]] | None) -> dict[str, tuple[int, ...]]:
    """{"BLOCK": [128, 256]} -> {"BLOCK": (128, 256)}, each value once, in the order given."""
    return {name: tuple(dict.fromkeys(int(v) for v in values)) for name, values in (params or {}).items()}


def _configure(
    chosen: list[KernelVariant], overrides: dict[str, tuple[int, ...]], notes: list[str]
) -> list[KernelVariant]:
    """Each chosen variant at every configuration the --param grid spans (the variants that
    lack one of the names run at their defaults, with a note); SweepError if none has them."""
    if not overrides:
        return chosen
    takers = [v for v in chosen if all(name in dict(v.params) for name in overrides)]
    if chosen and not takers:
        have = "; ".join(f"{v.name}: {', '.join(dict(v.params)) or 'none'}" for v in chosen)
        known = sorted({n for v in chosen for n, _ in v.params})
        hint = closest(next(n for n in overrides if n not in known), known) if known else ""
        raise SweepError(
            f"--param {', '.join(overrides)}: no chosen variant declares "
            f"{'it' if len(overrides) == 1 else 'them'}{hint} (params: {have})"
        )
    out: list[KernelVariant] = []
    for variant in chosen:
        if variant not in takers:
            notes.append(
                f"{variant.op} {variant.name} has no parameter "
                f"{', '.join(n for n in overrides if n not in dict(variant.params))}: "
                "it runs at its defaults"
            )
            out.append(variant)
            continue
        try:
            out += grid(variant, overrides)
        except SpaceError as exc:
            raise SweepError(str(exc)) from None
    return out


def checked_timing(options: TimingOptions) -> TimingOptions:
    """The options with --clocks parsed; SweepError (one line) for a --timer, --settle,
    --fill or --clocks that is not one of its choices, or a --max-time of 0 or less (a min
    time above the max yields to it; both given at once: flow.preflight). Cheap, so a command
    says bad usage before it probes the driver or plans."""
    if options.max_time_s <= 0:
        raise SweepError(
            f"--max-time {options.max_time_s:g}: a row needs some time for its samples; give "
            "seconds above 0 (--min-samples 1 --min-time 0 takes the fewest)"
        )
    if options.timer not in TIMERS:
        near = did_you_mean(options.timer, list(TIMERS))
        raise SweepError(f"--timer {options.timer!r}: choose {', '.join(TIMERS)}{near}")
    for name, value, choices in (("--settle", options.settle, SETTLE), ("--fill", options.fill, FILLS)):
        if value not in choices:
            near = did_you_mean(value, list(choices))
            raise SweepError(f"{name} {value!r}: choose {', '.join(choices)}{near}")
    try:
        return dataclasses.replace(options, clocks=parse_clocks(options.clocks))
    except ValueError as exc:
        raise SweepError(str(exc)) from None


def plan(
    target: str,
    shapes: Sequence[Shape] | None,
    variants: Sequence[str] | None,
    kernels: Sequence[Path] | None,
    dtypes: Sequence[str | DType] | None = None,
    params: Mapping[str, Sequence[int]] | None = None,
    expand: bool = True,
    ops: Sequence[Path] | None = None,
    **timing: object,
) -> Plan:
    """Jobs for a target (op name or config file), one per (benchmark, dtype, shape), each
    with the chosen variants that declare the dtype; `shapes` (tuples), `dtypes` (DType
    records or names, `all` among them; None: the config's) and `timing` (TimingOptions
    fields; None keeps the config's) override the config. `params` ({"BLOCK": (128, 256)})
    makes each variant that declares the names one variant per configuration of that grid.
    Bad usage is a SweepError, as is a dtype that no chosen variant of any benchmark
    supports. `expand=False` (tune) leaves the variants unconfigured and puts the grid in
    `narrowing`. `ops`: the user's op folders (--ops), beside $CUDABENCH_OPS and the
    catalogue; each job carries its op's file, so a worker (or the process profile runs)
    loads the same op."""
    check_target(target, ops)
    try:
        config = _config_for(target, shapes)
    except ConfigError as exc:
        raise SweepError(str(exc)) from exc
    parsed = tuple(tuple(shape) for shape in shapes) if shapes else None
    # field name -> value, as the CLI and the API typed them (mypy cannot match ** to the fields)
    changes: dict[str, Any] = {k: v for k, v in timing.items() if v is not None}
    options = checked_timing(dataclasses.replace(config.timing, **changes))
    jobs: list[CaseJob] = []
    problems: list[str] = []
    unsupported: list[str] = []
    notes: list[str] = []
    narrowing: list[dict[str, tuple[int, ...]]] = []
    overrides = _grid(params)
    for bench in config.benchmarks:
        try:
            op = get_op(bench.op)
        except UnknownName as exc:
            raise SweepError(f"{bench.op_at or config.source}: {exc}") from exc
        found, bad = discover(op.name, kernel_roots(kernels))
        problems += bad
        try:
            chosen, baselines = choose(found, list(variants or bench.variants), list(op.baselines()))
        except SweepError as exc:  # a name the config wrote: said at its line
            raise SweepError(
                f"{bench.variants_at}: {exc}" if bench.variants_at and not variants else str(exc)
            ) from None
        grid_values = {**bench.params, **overrides}
        if expand:
            chosen = _configure(chosen, grid_values, notes)
        for dtype in _dtypes(list(dtypes or bench.dtypes), chosen):
            in_dtype = [v for v in chosen if dtype.name in v.dtypes]
            if chosen and not in_dtype:  # a variant that lacks the dtype is not in its rows
                have = "; ".join(f"{v.name}: {', '.join(v.dtypes)}" for v in chosen)
                unsupported.append(f"no chosen variant of {op.name} runs in {dtype.name} ({have})")
                continue
            for shape in dict.fromkeys(parsed or bench.shapes):  # 1024 and 2^10 run once
                _takes(op, shape)
                case = Case(op=op.name, shape=shape, dtype=dtype.name)
                jobs.append(CaseJob(case, tuple(in_dtype), tuple(baselines), options))
                narrowing.append(grid_values)
    if unsupported and not jobs:
        more = f" (and {len(unsupported) - 1} more)" if len(unsupported) > 1 else ""
        raise SweepError(unsupported[0] + more)
    if any(job.variants for job in jobs) and backend_name() == "cupy":
        try:
            nvcc_path()  # every variant needs it: say so once, not in a row per variant
        except ToolchainError as exc:
            raise SweepError(str(exc)) from exc
    pinned = tuple(dict.fromkeys([*overrides, *(n for b in config.benchmarks for n in b.params)]))
    return Plan(
        jobs, problems, options, tuple(unsupported + notes), pinned, () if expand else tuple(narrowing)
    )


def apply_tuned(plan_: Plan, gpu: str, path: Path | None = None) -> Plan:
    """The plan with each variant that has a tuning-file entry for (this GPU model, op,
    dtype, shape) at that configuration (parameters set by --param stay as set). A note
    names each configuration taken. TuningError (one line) for an unreadable file."""
    try:
        entries = tuning_file.load(path)
    except tuning_file.TuningError as exc:
        raise SweepError(str(exc)) from None
    if not entries:
        return plan_
    jobs, taken, stale = [], [], []
    for job in plan_.jobs:
        case = job.case
        configured = []
        for variant in job.variants:
            entry = (
                tuning_file.lookup(entries, gpu, case.op, variant.name, case.dtype, case.shape_text)
                if variant.params
                else None
            )
            declared = dict(variant.params)
            if entry is not None:
                values = {n: v for n, v in entry.params.items() if n in declared and n not in plan_.pinned}
                tuned = variant.configured(values)
                broken = Space(variant.params, variant.constraints).violated(dict(tuned.values))
                if broken:  # the header changed since it was tuned
                    stale.append(f"{case.op} {variant.name} {case.shape_text} {case.dtype} breaks {broken!r}")
                else:
                    variant = tuned
                    taken.append(f"{case.op} {variant.label} {case.shape_text} {case.dtype}")
            configured.append(variant)
        jobs.append(dataclasses.replace(job, variants=tuple(dict.fromkeys(configured))))
    source = path or tuning_file.tuning_path()
    notes = list(plan_.notes)
    if taken:
        notes.append(f"tuned configurations from {source} (--no-tuned to ignore): {'; '.join(taken)}")
    if stale:
        notes.append(
            f"tuned configurations in {source} not used, the header's constraints "
            f"changed (tune again): {'; '.join(stale)}"
        )
    return dataclasses.replace(plan_, jobs=jobs, notes=tuple(notes))
