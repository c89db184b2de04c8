"""One sweep for every way cudabench runs cases: plan the jobs, run them on the workers (or in
this process, under ncu), stream each row as it ends, rewrite the results files after every
row, and keep the finished rows when the sweep is cut short.

`cudabench run`, `profile` and `tune` render it (cli/sweep.py draws the progress bar and turns
the errors below into exit statuses); the Python API calls the same functions, tune runs its
rounds on the same `Sweep`, and a Dask cluster is one more executor (cluster.py), so there is
no second path. Every row also goes to the history database when one is open. Nothing here prints or exits: bad usage is a
`SweepError` (one line), a sweep cut short raises `Interrupted` or `SweepFailed` after saving.
"""

from __future__ import annotations

import collections
import dataclasses
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cudabench import __version__, ceilings, tuning
from cudabench.backends import backend_name, open_backend
from cudabench.backends.base import Backend, BackendUnavailable
from cudabench.compile import ToolchainError, nvcc_path, nvcc_version
from cudabench.config import BenchConfig, Benchmark, ConfigError, builtin_config, load_config
from cudabench.cupti_clock import TIMERS
from cudabench.dtypes import ALL, DTYPES, UnknownDType, get_dtype
from cudabench.history import History, HistoryError
from cudabench.kernels import BUILTIN_KERNELS, discover, user_roots
from cudabench.ops import UnknownName, closest, get_op
from cudabench.pool import PoolError, PoolEvents, WorkerPool
from cudabench.results import ResultsError, check_writable, git_sha, result_stem, write_results
from cudabench.runner import CaseJob, Runner
from cudabench.shapes import ShapeError, parse_shape
from cudabench.space import Space, SpaceError, grid, parse_param_option
from cudabench.spec import (
    Case, Ceilings, DeviceInfo, KernelVariant, ResultRow, RunMeta, TimingOptions,
)  # fmt: skip


class SweepError(ValueError):
    """Bad usage found while planning or opening a sweep: one line, nothing has run."""


class Interrupted(Exception):
    """Ctrl-C during a sweep: the finished rows are saved (marked incomplete) in `path`."""

    def __init__(self, rows: list[ResultRow], path: Path) -> None:
        super().__init__(f"interrupted: {len(rows)} finished rows kept in {path}")
        self.rows, self.path = rows, path


class SweepFailed(Exception):
    """The sweep could not go on (a replacement worker would not start); rows are saved."""

    def __init__(self, reason: str, rows: list[ResultRow], path: Path) -> None:
        super().__init__(f"{reason}; the finished rows are kept in {path}")
        self.rows, self.path = rows, path


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


def kernel_roots(kernels: list[Path] | None) -> list[Path]:
    """The built-in kernels folder and the user's --kernels folders."""
    try:
        return [BUILTIN_KERNELS, *user_roots(kernels or [])]
    except FileNotFoundError as exc:
        raise SweepError(str(exc)) from None


def choose(variants: list[KernelVariant], names: list[str] | None,
           baselines: list[str]) -> tuple[list[KernelVariant], list[str]]:  # fmt: skip
    """The variants (and baselines) named; all of them when none is named. Baselines always
    run unless named otherwise: speedups need them."""
    if not names:
        return variants, baselines
    known = {v.name: v for v in variants}
    for name in names:
        if name not in known and name not in baselines:
            raise SweepError(f"unknown variant {name!r}{closest(name, sorted(known) + baselines)}")
    return [known[n] for n in dict.fromkeys(names) if n in known], baselines


def _config_for(target: str, shapes: list[str] | None) -> BenchConfig:
    """A config file, or an op name with --shape (default: configs/<op>.yaml's shapes)."""
    path = Path(target)
    if target.endswith((".yaml", ".yml")) or path.is_file():
        config = load_config(path)
    else:
        try:
            op = get_op(target)
        except UnknownName as exc:
            raise SweepError(str(exc))
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


def _dtype_names(asked: list[str], chosen: list[KernelVariant]) -> list[str]:
    """The dtypes to run: the asked ones, `all` standing for every dtype the chosen variants
    declare (float32 first); an unknown name is a SweepError with a did-you-mean."""
    names: list[str] = []
    for name in asked:
        if name == ALL:
            names += [d for d in DTYPES if any(d in v.dtypes for v in chosen)]
            continue
        try:
            names.append(get_dtype(name).name)
        except UnknownDType as exc:
            raise SweepError(f"--dtype: {exc}")
    return list(dict.fromkeys(names))


def _overrides(params: list[str] | None) -> dict[str, tuple[int, ...]]:
    """`--param BLOCK=128,256` options -> {"BLOCK": (128, 256)}; SweepError if malformed."""
    found: dict[str, tuple[int, ...]] = {}
    for text in params or []:
        try:
            name, values = parse_param_option(text)
        except SpaceError as exc:
            raise SweepError(str(exc)) from None
        found[name] = tuple(dict.fromkeys(found.get(name, ()) + values))
    return found


def _configure(chosen: list[KernelVariant], overrides: dict[str, tuple[int, ...]],
               notes: list[str]) -> list[KernelVariant]:  # fmt: skip
    """Each chosen variant at every configuration the --param grid spans (the variants that
    lack one of the names run at their defaults, with a note); SweepError if none has them."""
    if not overrides:
        return chosen
    takers = [v for v in chosen if all(name in dict(v.params) for name in overrides)]
    if chosen and not takers:
        have = "; ".join(f"{v.name}: {', '.join(dict(v.params)) or 'none'}" for v in chosen)
        known = sorted({n for v in chosen for n, _ in v.params})
        hint = closest(next(n for n in overrides if n not in known), known) if known else ""
        raise SweepError(f"--param {', '.join(overrides)}: no chosen variant declares "
                         f"{'it' if len(overrides) == 1 else 'them'}{hint} (params: {have})")  # fmt: skip
    out: list[KernelVariant] = []
    for variant in chosen:
        if variant not in takers:
            notes.append(f"{variant.op} {variant.name} has no parameter "
                         f"{', '.join(n for n in overrides if n not in dict(variant.params))}: "
                         "it runs at its defaults")  # fmt: skip
            out.append(variant)
            continue
        try:
            out += grid(variant, overrides)
        except SpaceError as exc:
            raise SweepError(str(exc)) from None
    return out


def plan(target: str, shapes: list[str] | None, variants: list[str] | None,
         kernels: list[Path] | None, dtypes: list[str] | None = None,
         params: list[str] | None = None, expand: bool = True,
         **timing: object) -> Plan:  # fmt: skip
    """Jobs for a target (op name or config file), one per (benchmark, dtype, shape), each
    with the chosen variants that declare the dtype; `dtypes` (None: the config's) and
    `timing` override the config (None keeps it). `params` (`--param BLOCK=128,256`) makes
    each variant that declares the names one variant per configuration of that grid. Bad
    usage is a SweepError, as is a dtype that no chosen variant of any benchmark supports.
    `expand=False` (tune) leaves the variants unconfigured and puts the grid in `narrowing`."""
    try:
        config = _config_for(target, shapes)
        parsed = tuple(parse_shape(s) for s in shapes) if shapes else None
    except (ConfigError, ShapeError) as exc:
        raise SweepError(str(exc))
    options = dataclasses.replace(
        config.timing, **{k: v for k, v in timing.items() if v is not None}
    )  # type: ignore[arg-type]
    if options.timer not in TIMERS:
        raise SweepError(f"--timer {options.timer!r}: choose {', '.join(TIMERS)}"
                         f"{closest(options.timer, list(TIMERS))}")  # fmt: skip
    jobs: list[CaseJob] = []
    problems: list[str] = []
    unsupported: list[str] = []
    notes: list[str] = []
    narrowing: list[dict[str, tuple[int, ...]]] = []
    overrides = _overrides(params)
    for bench in config.benchmarks:
        try:
            op = get_op(bench.op)
        except UnknownName as exc:
            raise SweepError(f"{config.source}: {exc}")
        found, bad = discover(op.name, kernel_roots(kernels))
        problems += bad
        chosen, baselines = choose(found, list(variants or bench.variants), list(op.baselines()))
        grid_values = {**bench.params, **overrides}
        if expand:
            chosen = _configure(chosen, grid_values, notes)
        for dtype in _dtype_names(list(dtypes or bench.dtypes), chosen):
            in_dtype = [v for v in chosen if dtype in v.dtypes]
            if chosen and not in_dtype:  # a variant that lacks the dtype is not in its rows
                have = "; ".join(f"{v.name}: {', '.join(v.dtypes)}" for v in chosen)
                unsupported.append(f"no chosen variant of {op.name} runs in {dtype} ({have})")
                continue
            for shape in parsed or bench.shapes:
                try:
                    op.check_shape(shape)
                except ValueError as exc:
                    raise SweepError(f"shape {'x'.join(map(str, shape))}: {exc}")
                case = Case(op=op.name, shape=shape, dtype=dtype)
                jobs.append(CaseJob(case, tuple(in_dtype), tuple(baselines), options))
                narrowing.append(grid_values)
    if unsupported and not jobs:
        raise SweepError(unsupported[0] + (f" (and {len(unsupported) - 1} more)" if len(unsupported) > 1 else ""))
    if any(job.variants for job in jobs) and backend_name() == "cupy":
        try:
            nvcc_path()  # every variant needs it: say so once, not in a row per variant
        except ToolchainError as exc:
            raise SweepError(str(exc))
    pinned = tuple(dict.fromkeys([*overrides, *(n for b in config.benchmarks for n in b.params)]))
    return Plan(jobs, problems, options, tuple(unsupported + notes), pinned,
                () if expand else tuple(narrowing))


def apply_tuned(plan_: Plan, gpu: str, path: Path | None = None) -> Plan:
    """The plan with each variant that has a tuning-file entry for (this GPU model, op,
    dtype, shape) at that configuration (parameters set by --param stay as set). A note
    names each configuration taken. TuningError (one line) for an unreadable file."""
    try:
        entries = tuning.load(path)
    except tuning.TuningError as exc:
        raise SweepError(str(exc)) from None
    if not entries:
        return plan_
    jobs, taken, stale = [], [], []
    for job in plan_.jobs:
        case = job.case
        configured = []
        for variant in job.variants:
            entry = tuning.lookup(entries, gpu, case.op, variant.name, case.dtype,
                                  case.shape_text) if variant.params else None  # fmt: skip
            declared = dict(variant.params)
            if entry is not None:
                values = {n: v for n, v in entry.params.items()
                          if n in declared and n not in plan_.pinned}  # fmt: skip
                tuned = variant.configured(values)
                broken = Space(variant.params, variant.constraints).violated(dict(tuned.values))
                if broken:  # the header changed since it was tuned
                    stale.append(f"{case.op} {variant.name} {case.shape_text} {case.dtype} "
                                 f"breaks {broken!r}")  # fmt: skip
                else:
                    variant = tuned
                    taken.append(f"{case.op} {variant.label} {case.shape_text} {case.dtype}")
            configured.append(variant)
        jobs.append(dataclasses.replace(job, variants=tuple(dict.fromkeys(configured))))
    source = path or tuning.tuning_path()
    notes = list(plan_.notes)
    if taken:
        notes.append(f"tuned configurations from {source} (--no-tuned to ignore): "
                     f"{'; '.join(taken)}")  # fmt: skip
    if stale:
        notes.append(f"tuned configurations in {source} not used, the header's constraints "
                     f"changed (tune again): {'; '.join(stale)}")  # fmt: skip
    return dataclasses.replace(plan_, jobs=jobs, notes=tuple(notes))


def parse_devices(text: str) -> list[int] | None:
    """`0`, `0,1` or `all` (None: every GPU of the host); SweepError on anything else."""
    if text.strip().lower() == "all":
        return None
    try:
        devices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SweepError(f"--devices {text!r}: give GPU indices like 0 or 0,1, or 'all'")
    if not devices or any(d < 0 for d in devices) or len(set(devices)) != len(devices):
        raise SweepError(f"--devices {text!r}: give distinct GPU indices like 0 or 0,1, or 'all'")
    return devices


def open_workers(devices: list[int] | None, timeout_s: float,
                 timer: str = "events") -> WorkerPool:  # fmt: skip
    """One worker process per GPU; SweepError if there is no GPU, or if `timer` is cupti or
    both and CUPTI cannot start. (A shape too large for the GPU is not an error here: its
    rows are SKIPPED with the bytes it needs, and the other shapes run.)"""
    pool = WorkerPool(devices, timeout_s, timer=timer)
    try:
        pool.open()
    except PoolError as exc:
        pool.close(graceful=False)
        raise SweepError(str(exc))
    return pool


def open_gpu(device: int) -> Backend:
    """The GPU backend in this process (profile mode); SweepError if there is none."""
    try:
        return open_backend(device=device)
    except BackendUnavailable as exc:
        raise SweepError(str(exc))


def results_stem(output: Path | None, op_label: str, started: str) -> Path:
    """Where the run's files go; SweepError if that folder cannot be written."""
    stem = result_stem(output, op_label, started)
    try:
        check_writable(stem)
    except ResultsError as exc:
        raise SweepError(str(exc))
    return stem


def run_meta(info: DeviceInfo, versions: dict[str, str], timing: TimingOptions, command: str,
             started: str, devices: list[int]) -> RunMeta:  # fmt: skip
    """The run's metadata, marked incomplete until the last row is in; the clock is the one
    the workers resolved (`auto` becomes cupti or events) with their note if they fell back."""
    timing = dataclasses.replace(timing, timer=versions.get("timer", timing.timer))
    note = versions.get("timer_note", "")
    return RunMeta(
        device=info, timing_mode=timing.mode, command=command,
        started=started, cudabench_version=__version__,
        cupy_version=versions.get("cupy", ""), nvcc_version=nvcc_version(),
        git_sha=git_sha(), timing=timing, complete=False, devices=tuple(devices),
        notes=(note,) if note else (),
    )  # fmt: skip


class Listener(Protocol):
    """What a sweep tells its caller besides saving: a case started, a row ended."""

    def started(self, case: Case, name: str, device: int) -> None: ...

    def finished(self, row: ResultRow) -> None: ...


# Runs jobs and reports their events; `ready(i)`, when given, is called before job i is
# dispatched and may block (tune: until nvcc has compiled the job's configurations).
Ready = Callable[[int], None]
Execute = Callable[[list[CaseJob], PoolEvents, "Ready | None"], None]


class Sweep:
    """Jobs run on one executor in one round (`run`, `profile`, the API) or several (`tune`:
    its strategy asks for more after each), every row saved as it ends: the results files
    rewritten, and the row written to the history database (when one is given). Ctrl-C saves
    the finished rows (marked incomplete) and raises Interrupted; a pool that cannot go on,
    SweepFailed. `finish()` marks the run complete. A database that fails mid-run is closed
    and its error kept in `history_error`; the files go on being written."""

    def __init__(self, execute: Execute, stem: Path, meta: RunMeta,
                 listener: Listener | None = None, history: History | None = None,
                 tag: str = "") -> None:  # fmt: skip
        self.execute, self.stem, self.meta, self.listener = execute, stem, meta, listener
        self.history, self.tag = history, tag
        self.history_error = ""
        self.run_id: int | None = None
        self.jobs: list[CaseJob] = []
        self._done: dict[int, list[ResultRow]] = {}  # finished jobs, speedups filled in
        self._pending: dict[int, list[ResultRow]] = collections.defaultdict(list)

    @property
    def rows(self) -> list[ResultRow]:
        """Every row so far, in job order."""
        return [r for i in range(len(self.jobs))
                for r in self._done.get(i, self._pending.get(i, []))]  # fmt: skip

    def save(self) -> None:
        """The results files as they stand (the run not yet complete)."""
        write_results(self.stem, self.meta, self.rows)

    def _record(self, rows: list[ResultRow], meta: RunMeta | None = None) -> None:
        """Write rows (and, with `meta`, the run's final metadata) to the history database."""
        if self.history is None:
            return
        try:
            if self.run_id is None:
                self.run_id = self.history.add_run(self.meta, self.tag)
            for row in rows:
                self.history.add_row(self.run_id, row)
            if meta is not None:
                self.history.finish_run(self.run_id, meta)
        except (sqlite3.Error, HistoryError) as exc:
            self.history_error = f"history database {self.history.path}: {exc}; the run goes on"
            self.history.close()
            self.history = None

    def finish(self, rows: list[ResultRow] | None = None) -> tuple[Path, Path]:
        """Mark the run complete: the files rewritten (with `rows`, e.g. after ncu's metrics
        were joined), the database's rows and run updated. Returns the CSV and JSON paths."""
        self.meta = dataclasses.replace(self.meta, complete=True)
        rows = self.rows if rows is None else [ceilings.annotate(r, self.meta.ceilings) for r in rows]
        paths = write_results(self.stem, self.meta, rows)
        self._record(rows, self.meta)
        return paths

    def run(self, jobs: list[CaseJob], ready: Ready | None = None) -> list[list[ResultRow]]:
        """Run a round of jobs; returns each job's rows (in the jobs' order)."""
        offset = len(self.jobs)
        self.jobs += jobs
        outer = self

        class Events:
            def started(self, case: Case, name: str, device: int) -> None:
                if outer.listener is not None:
                    outer.listener.started(case, name, device)

            def row(self, job_index: int, row: ResultRow) -> None:
                row = ceilings.annotate(row, outer.meta.ceilings)
                outer._pending[offset + job_index].append(row)
                outer.save()  # every row saved as it ends
                outer._record([row])
                if outer.listener is not None:
                    outer.listener.finished(row)

            def job_done(self, job_index: int, finished: list[ResultRow]) -> None:
                finished = [ceilings.annotate(r, outer.meta.ceilings) for r in finished]
                outer._done[offset + job_index] = finished
                outer._pending.pop(offset + job_index, None)
                outer.save()
                outer._record(finished)  # with their speedups now

        try:
            self.execute(jobs, Events(), ready)
        except KeyboardInterrupt:
            self.save()  # complete: false
            raise Interrupted(self.rows, self.stem.with_suffix(".json")) from None
        except PoolError as exc:
            self.save()
            raise SweepFailed(str(exc), self.rows, self.stem.with_suffix(".json")) from None
        return [self._done.get(offset + i, []) for i in range(len(jobs))]


def run_jobs(plan_: Plan, execute: Execute, stem: Path, meta: RunMeta,
             listener: Listener | None = None, history: History | None = None,
             tag: str = "") -> Sweep:  # fmt: skip
    """Run every job of the plan in one round; the Sweep holds the rows (in plan order) and
    `finish()`es the run."""
    sweep = Sweep(execute, stem, meta, listener, history, tag)
    sweep.run(plan_.jobs)
    return sweep


def calibrate(execute: Execute, info: DeviceInfo, versions: dict[str, str], devices: list[int],
              started: str, size: int | None = None, output: Path | None = None,
              listener: Listener | None = None, command: str = "cudabench ceilings",
              timing: TimingOptions | None = None) -> tuple[Ceilings, Sweep]:  # fmt: skip
    """Measure this GPU's ceilings (ceilings.py) on `execute`: each stream op over arrays of
    8x the L2 size at a few configurations, with its library reference, and the FMA op; the
    rows are a run of their own (results/<time>_ceilings.*), timed as `timing` says (hot, by
    events, whatever it asks of those: the ceilings are DRAM rates). Returns the ceilings (kept in
    the ceilings file unless $CUDABENCH_CEILINGS is off) and the finished Sweep. SweepError
    for a bad size; ceilings.CeilingsError (the rows saved) for a mix left without a correct
    row."""
    try:
        n = ceilings.array_elements(info, size)
    except ceilings.CeilingsError as exc:
        raise SweepError(str(exc)) from None
    options = dataclasses.asdict(dataclasses.replace(timing or TimingOptions(), cold=False,
                                                     timer="events", interleave=False))  # fmt: skip
    jobs = [job for op in ceilings.MIX_OPS.values()
            for job in plan(op, [str(n)], None, None, **options).jobs]  # fmt: skip
    jobs += plan("fma", [str(ceilings.FMA_THREADS)], None, None, **options).jobs
    # each variant at every configuration of its grid (ceilings.STREAM_GRIDS, FMA_GRID)
    jobs = [dataclasses.replace(job, variants=tuple(
        c for v in job.variants for c in grid(v, ceilings.variant_grid(v))))
        for job in jobs]  # fmt: skip
    work = Plan(jobs, [], jobs[0].timing)
    stem = results_stem(output, "ceilings", started)
    meta = run_meta(info, versions, work.timing, command, started, devices)
    done = run_jobs(work, execute, stem, meta, listener)
    try:
        found = ceilings.from_rows(done.rows, info, started, str(stem.with_suffix(".json")))
    except ceilings.CeilingsError as exc:
        done.finish()
        raise ceilings.CeilingsError(f"{exc} (rows in {stem.with_suffix('.json')})") from None
    done.meta = dataclasses.replace(done.meta, ceilings=found)
    done.finish()
    path = ceilings.cache_path()
    if path is not None:
        ceilings.save(found, path)
    return found, done


def use_ceilings(execute: Execute, meta: RunMeta, versions: dict[str, str],
                 recalibrate: bool = False, announce: Callable[[str], None] | None = None,
                 listener: Listener | None = None, output: Path | None = None,
                 history: History | None = None) -> RunMeta:  # fmt: skip
    """The run's metadata with the ceilings its `% ceiling` column uses, and a note saying
    which: the kept ones for this GPU model, driver and memory clock, or measured now on
    `execute` (`announce` says so first; the rows in the folder `output`) when there are
    none, they are stale, or `recalibrate`. The history database, when open, is the second
    place they are kept: a run's metadata records the ceilings it used, so a file lost or
    moved does not mean measuring again. A measurement that leaves a mix without a correct
    row is a note and no column, not the end of the run. `meta` unchanged when the ceilings
    file is off; SweepError for an unreadable file."""
    path = ceilings.cache_path()
    if path is None:
        return meta
    info = meta.device
    try:
        entries = ceilings.load(path)
    except ceilings.CeilingsError as exc:
        raise SweepError(f"{exc} (move it away, or set CUDABENCH_CEILINGS=off)") from None

    def using(found: Ceilings | None, note: str) -> RunMeta:
        return dataclasses.replace(meta, ceilings=found, notes=(*meta.notes, f"% ceiling: {note}"))

    kept = None if recalibrate else ceilings.lookup(entries, info)
    if kept is not None:
        return using(kept, f"this GPU's ceilings from {path} (measured {kept.measured})")
    recorded = None
    if history is not None and not recalibrate:
        try:
            recorded = history.ceilings(ceilings.key_of(info))
        except (sqlite3.Error, HistoryError):  # the database's trouble is the run's to report
            recorded = None
    if recorded is not None:
        ceilings.save(recorded, path)
        return using(recorded, f"this GPU's ceilings from the history database "
                               f"{history.path} (measured {recorded.measured}), kept in {path}")  # type: ignore[union-attr]
    why = ("--recalibrate" if recalibrate else ceilings.stale(entries, info)
           or f"none kept for the {info.name} in {path}")  # fmt: skip
    if announce is not None:
        announce(f"measuring this GPU's ceilings first ({why}; about 30 rows, once per GPU "
                 "model, driver and memory clock; --no-ceilings skips it)")  # fmt: skip
    try:
        found, done = calibrate(execute, info, versions, list(meta.devices), meta.started,
                                output=output, listener=listener, timing=meta.timing)  # fmt: skip
    except ceilings.CeilingsError as exc:
        return using(None, f"not measured: {exc}")
    return using(found, f"this GPU's ceilings measured now ({why}), rows in "
                        f"{done.stem.with_suffix('.json')}")


def open_history(path: Path | None) -> History:
    """The history database, opened (created or migrated); HistoryError if unusable."""
    return History(path).open()


def on_workers(pool: WorkerPool) -> Execute:
    """The worker pool as an executor (the caller closes the pool: `with pool:`)."""

    def execute(jobs: list[CaseJob], events: PoolEvents, ready: Ready | None = None) -> None:
        pool.run(jobs, events, ready)

    return execute


def in_process(backend: Backend, device: int, profile: bool = False) -> Execute:
    """This process as an executor (profile mode, under ncu; tests with the fake backend):
    the same events as the pool sends, from a Runner's observer."""
    forward_index = [0]

    class Forward:
        events: PoolEvents

        def started(self, case: Case, name: str) -> None:
            self.events.started(case, name, device)

        def finished(self, row: ResultRow) -> None:
            self.events.row(forward_index[0], dataclasses.replace(row, device=device))

    forward = Forward()
    runner = Runner(backend, forward, profile=profile)

    def execute(jobs: list[CaseJob], events: PoolEvents, ready: Ready | None = None) -> None:
        forward.events = events
        for index, job in enumerate(jobs):
            if ready is not None:
                ready(index)
            forward_index[0] = index
            events.job_done(index, runner.run_job(job))

    return execute
