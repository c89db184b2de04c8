"""What `run` and `profile` share: turning a target and flags into jobs, opening the GPU,
running the jobs with a progress bar while saving every finished row, and the closing summary.
"""

from __future__ import annotations

import collections
import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudabench import __version__
from cudabench.backends import backend_name, open_backend
from cudabench.backends.base import Backend, BackendUnavailable
from cudabench.cli.common import err, fail_usage, select, variants_for
from cudabench.compile import ToolchainError, nvcc_path, nvcc_version
from cudabench.config import BenchConfig, Benchmark, ConfigError, builtin_config, load_config
from cudabench.ops import UnknownName, get_op
from cudabench.report import failure_summary
from cudabench.pool import PoolError, PoolEvents, WorkerPool
from cudabench.results import ResultsError, check_writable, git_sha, result_stem, write_results
from cudabench.runner import CaseJob, Runner
from cudabench.shapes import ShapeError, parse_shape
from cudabench.dtypes import ALL, DTYPES, UnknownDType, get_dtype
from cudabench.spec import Case, DeviceInfo, KernelVariant, ResultRow, RunMeta, TimingOptions

SUMMARY_LINES = 20


@dataclass(frozen=True)
class Plan:
    """The jobs of one command, and the kernel files that could not be loaded."""

    jobs: list[CaseJob]
    problems: list[str]
    timing: TimingOptions
    notes: tuple[str, ...] = ()  # what the plan left out and why (no variant in a dtype)

    @property
    def op_label(self) -> str:
        return "+".join(dict.fromkeys(job.case.op for job in self.jobs))

    @property
    def rows_expected(self) -> int:
        return sum(len(job.variants) + len(job.baselines) for job in self.jobs)


def _config_for(target: str, shapes: list[str] | None) -> BenchConfig:
    """A config file, or an op name with --shape (default: configs/<op>.yaml's shapes)."""
    path = Path(target)
    if target.endswith((".yaml", ".yml")) or path.is_file():
        config = load_config(path)
    else:
        try:
            op = get_op(target)
        except UnknownName as exc:
            fail_usage(str(exc))
        if shapes:
            return BenchConfig((Benchmark(op.name, ()),), TimingOptions(), "command line")
        default = builtin_config(op.name)
        if not default.is_file():
            fail_usage(f"no --shape given and no {default} for {op.name!r}")
        config = load_config(default)
        config = dataclasses.replace(
            config, benchmarks=tuple(b for b in config.benchmarks if b.op == op.name)
        )
    return config


def command_line(ctx: typer.Context) -> str:
    """The command as the user could type it again (rebuilt from the parsed options, so it
    reads the same whether run as `cudabench`, `python -m cudabench` or from a test)."""
    words = ["cudabench", ctx.command.name or ""]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value == param.default or value == []:
            continue
        if param.param_type_name == "argument":
            words.append(str(value))
            continue
        flag = max(param.opts, key=len)
        if isinstance(value, bool) and param.secondary_opts:  # --cold/--hot
            words.append(param.opts[0] if value else param.secondary_opts[0])
        elif isinstance(value, bool):
            words += [flag] if value else []
        else:
            for item in value if isinstance(value, (list, tuple)) else [value]:
                words += [flag, str(item)]
    return shlex.join(words)


def _dtype_names(asked: list[str], chosen: list[KernelVariant]) -> list[str]:
    """The dtypes to run: the asked ones, `all` standing for every dtype the chosen variants
    declare (float32 first); an unknown name exits 2 with a did-you-mean."""
    names: list[str] = []
    for name in asked:
        if name == ALL:
            names += [d for d in DTYPES if any(d in v.dtypes for v in chosen)]
            continue
        try:
            names.append(get_dtype(name).name)
        except UnknownDType as exc:
            fail_usage(f"--dtype: {exc}")
    return list(dict.fromkeys(names))


def plan(target: str, shapes: list[str] | None, variants: list[str] | None,
         kernels: list[Path] | None, dtypes: list[str] | None = None,
         **timing: object) -> Plan:  # fmt: skip
    """Jobs for a target (op name or config file), one per (benchmark, dtype, shape), each
    with the chosen variants that declare the dtype; `dtypes` (None: the config's) and
    `timing` override the config (None keeps it). Bad usage exits 2 with one line, as does a
    dtype that no chosen variant of any benchmark supports."""
    try:
        config = _config_for(target, shapes)
        parsed = tuple(parse_shape(s) for s in shapes) if shapes else None
    except (ConfigError, ShapeError) as exc:
        fail_usage(str(exc))
    options = dataclasses.replace(
        config.timing, **{k: v for k, v in timing.items() if v is not None}
    )  # type: ignore[arg-type]
    jobs: list[CaseJob] = []
    problems: list[str] = []
    unsupported: list[str] = []
    for bench in config.benchmarks:
        try:
            op = get_op(bench.op)
        except UnknownName as exc:
            fail_usage(f"{config.source}: {exc}")
        found, bad = variants_for(op.name, kernels)
        problems += bad
        chosen, baselines = select(found, list(variants or bench.variants), list(op.baselines()))
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
                    fail_usage(f"shape {'x'.join(map(str, shape))}: {exc}")
                case = Case(op=op.name, shape=shape, dtype=dtype)
                jobs.append(CaseJob(case, tuple(in_dtype), tuple(baselines), options))
    if unsupported and not jobs:
        fail_usage(unsupported[0] + (f" (and {len(unsupported) - 1} more)" if len(unsupported) > 1 else ""))
    if any(job.variants for job in jobs) and backend_name() == "cupy":
        try:
            nvcc_path()  # every variant needs it: say so once, not in a row per variant
        except ToolchainError as exc:
            fail_usage(str(exc))
    return Plan(jobs, problems, options, tuple(unsupported))


def parse_devices(text: str) -> list[int] | None:
    """`0`, `0,1` or `all` (None: every GPU of the host); exit 2 on anything else."""
    if text.strip().lower() == "all":
        return None
    try:
        devices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fail_usage(f"--devices {text!r}: give GPU indices like 0 or 0,1, or 'all'")
    if not devices or any(d < 0 for d in devices) or len(set(devices)) != len(devices):
        fail_usage(f"--devices {text!r}: give distinct GPU indices like 0 or 0,1, or 'all'")
    return devices


def open_workers(devices: list[int] | None, timeout_s: float) -> WorkerPool:
    """One worker process per GPU; exit 2 if there is no GPU. (A shape too large for the
    GPU is not an error here: its rows are SKIPPED with the bytes it needs, and the other
    shapes run.)"""
    pool = WorkerPool(devices, timeout_s)
    try:
        pool.open()
    except PoolError as exc:
        pool.close(graceful=False)
        fail_usage(str(exc))
    return pool


def open_gpu(device: int) -> Backend:
    """The GPU backend in this process (profile mode); exit 2 if there is none."""
    try:
        return open_backend(device=device)
    except BackendUnavailable as exc:
        fail_usage(str(exc))


def results_stem(output: Path | None, op_label: str, started: str) -> Path:
    """Where the run's files go; exit 2 if that folder cannot be written."""
    stem = result_stem(output, op_label, started)
    try:
        check_writable(stem)
    except ResultsError as exc:
        fail_usage(str(exc))
    return stem


def run_meta(info: DeviceInfo, versions: dict[str, str], timing: TimingOptions, command: str,
             started: str, devices: list[int]) -> RunMeta:  # fmt: skip
    """The run's metadata, marked incomplete until the last row is in."""
    return RunMeta(
        device=info, timing_mode=timing.mode, command=command,
        started=started, cudabench_version=__version__,
        cupy_version=versions.get("cupy", ""), nvcc_version=nvcc_version(),
        git_sha=git_sha(), timing=timing, complete=False, devices=tuple(devices),
    )  # fmt: skip


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    )  # fmt: skip


def _interrupted(stem: Path, meta: RunMeta, saved: list[ResultRow]) -> typer.Exit:
    write_results(stem, meta, saved)  # complete: false
    err.print(f"interrupted: {len(saved)} finished rows kept in {stem.with_suffix('.json')} "
              "(marked incomplete)", soft_wrap=True, markup=False)  # fmt: skip
    return typer.Exit(130)


def run_jobs(plan_: Plan, execute: Callable[[PoolEvents], None], stem: Path, meta: RunMeta,
             multi_gpu: bool = False) -> list[ResultRow]:  # fmt: skip
    """Run every job through `execute` (on_workers or in_process) with a
    progress bar, rewriting the results files after every row. Ctrl-C keeps the finished
    rows (marked incomplete) and exits 130."""
    done: dict[int, list[ResultRow]] = {}  # finished jobs, speedups filled in
    pending: dict[int, list[ResultRow]] = collections.defaultdict(list)  # jobs under way

    def rows() -> list[ResultRow]:
        return [r for i in range(len(plan_.jobs)) for r in done.get(i, pending.get(i, []))]

    progress = _progress()
    with progress:
        task = progress.add_task("starting", total=plan_.rows_expected)

        class Events:
            def started(self, case: Case, name: str, device: int) -> None:
                where = f" [GPU {device}]" if multi_gpu else ""
                progress.update(task, description=f"{case.op} {case.shape_text} {name}{where}")

            def row(self, job_index: int, row: ResultRow) -> None:
                progress.advance(task)
                pending[job_index].append(row)
                write_results(stem, meta, rows())  # every row saved as it ends

            def job_done(self, job_index: int, finished: list[ResultRow]) -> None:
                done[job_index] = finished
                pending.pop(job_index, None)
                write_results(stem, meta, rows())

        try:
            execute(Events())
        except KeyboardInterrupt:
            raise _interrupted(stem, meta, rows()) from None
        except PoolError as exc:  # a replacement worker would not start
            write_results(stem, meta, rows())
            err.print(f"[bold red]error:[/] {exc}; the finished rows are kept in "
                      f"{stem.with_suffix('.json')}", soft_wrap=True)  # fmt: skip
            raise typer.Exit(1) from None
    return rows()


def on_workers(plan_: Plan, pool: WorkerPool) -> Callable[[PoolEvents], None]:
    """run_jobs's `execute` for the worker pool (closed when the jobs are done)."""

    def execute(events: PoolEvents) -> None:
        with pool:
            pool.run(plan_.jobs, events)

    return execute


def in_process(plan_: Plan, backend: Backend, device: int,
               profile: bool = False) -> Callable[[PoolEvents], None]:  # fmt: skip
    """run_jobs's `execute` in this process (profile mode, under ncu): the same events as
    the pool sends, from a Runner's observer."""

    def execute(events: PoolEvents) -> None:
        class Forward:
            index = 0

            def started(self, case: Case, name: str) -> None:
                events.started(case, name, device)

            def finished(self, row: ResultRow) -> None:
                events.row(self.index, row)

        forward = Forward()
        runner = Runner(backend, forward, profile=profile)
        for index, job in enumerate(plan_.jobs):
            forward.index = index
            events.job_done(index, runner.run_job(job))

    return execute


def exit_with_summary(rows: list[ResultRow], problems: list[str]) -> None:
    """Name the failed rows and kernel files and exit 1, if there are any. A library
    baseline that fails validation (a 16-bit expression that rounds after every step, say) is
    named too, but it is the library's result, not the user's kernel: it does not fail the
    run."""
    for line in failure_summary(rows, baselines=True):
        err.print(f"note: library baseline {line}", soft_wrap=True, markup=False)
    failed = failure_summary(rows)
    if failed or problems:
        err.print(f"[bold red]{len(failed) + len(problems)} failed:[/]")
        lines = problems + failed
        for line in lines[:SUMMARY_LINES]:
            err.print(f"  {line}", soft_wrap=True, markup=False)
        if len(lines) > SUMMARY_LINES:
            err.print(f"  ... and {len(lines) - SUMMARY_LINES} more (see the results file)")
        raise typer.Exit(1)
