"""`cudabench run`: compile, validate, time and table the variants of an op over shapes."""

from __future__ import annotations

import dataclasses
import json
import shlex


from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudabench import __version__
from cudabench.backends import open_backend
from cudabench.backends.base import BackendUnavailable
from cudabench.cli.common import KERNELS_OPTION_HELP, err, fail_usage, out, select, variants_for
from cudabench.compile import nvcc_version
from cudabench.config import BenchConfig, Benchmark, ConfigError, builtin_config, load_config
from cudabench.nvtx import ncu_filter
from cudabench.ops import UnknownName, get_op
from cudabench.report import failure_summary, results_table
from cudabench.results import (
    ResultsError, check_writable, git_sha, now_utc, result_stem, results_document, write_results,
)  # fmt: skip
from cudabench.runner import CaseJob, Runner
from cudabench.shapes import ShapeError, parse_shape
from cudabench.spec import Case, ResultRow, RunMeta, TimingOptions

SUMMARY_LINES = 20


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


def _command_line(ctx: typer.Context) -> str:
    """The command as the user could type it again (rebuilt from the parsed options, so it
    reads the same whether run as `cudabench`, `python -m cudabench` or from a test)."""
    words = ["cudabench", "run"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or value == param.default or value == []:
            continue
        if param.param_type_name == "argument":
            words.append(str(value))
            continue
        flag = max(param.opts, key=len)
        if param.is_flag and value is True:
            words.append(flag)
        elif param.name in ("cold", "interleave"):
            words.append(param.opts[0].split("/")[0 if value else 1])
        else:
            for item in value if isinstance(value, (list, tuple)) else [value]:
                words += [flag, str(item)]
    return shlex.join(words)


def _timing(base: TimingOptions, cold: bool | None, interleave: bool | None,
            min_samples: int | None, min_time: float | None, max_time: float | None,
            warmup: int | None) -> TimingOptions:  # fmt: skip
    changes = {"cold": cold, "interleave": interleave, "min_samples": min_samples,
               "min_time_s": min_time, "max_time_s": max_time, "warmup": warmup}  # fmt: skip
    return dataclasses.replace(base, **{k: v for k, v in changes.items() if v is not None})


def run_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(
        help="An op name (e.g. reduce) or a YAML config file (e.g. configs/reduce.yaml).")],
    shape: Annotated[Optional[list[str]], typer.Option(
        "--shape", "-s", help="Shape such as 442368x128, 2^30 or 1e6; repeatable. "
        "Default: the shapes in configs/<op>.yaml.")] = None,
    variant: Annotated[Optional[list[str]], typer.Option(
        "--variant", "-v", help="Only these variants (repeatable); baselines always run.")] = None,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    cold: Annotated[Optional[bool], typer.Option(
        "--cold/--hot", help="Cold: flush L2 (a memset of 2x its size) before every sample. "
        "Default hot: launches under 50 us timed back to back in CUDA-graph batches, longer "
        "ones singly, isolated.")] = None,
    interleave: Annotated[Optional[bool], typer.Option(
        "--interleave/--no-interleave", help="Sample the variants of a shape in turn "
        "(A B A B ...) so clock and thermal drift fall on all alike.")] = None,
    min_samples: Annotated[Optional[int], typer.Option(
        min=1, help="Samples per row at least (default 10).")] = None,
    min_time: Annotated[Optional[float], typer.Option(
        min=0.0, help="Seconds of GPU time the samples add up to, at least (default 0.2).")] = None,
    max_time: Annotated[Optional[float], typer.Option(
        min=0.0, help="Seconds of GPU time per row at most (default 10).")] = None,
    warmup: Annotated[Optional[int], typer.Option(
        min=0, help="Warm-up launches before the samples (default 3).")] = None,
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", help="Folder for the result files, or a file stem "
        "(default results/<timestamp>_<op>.csv/.json).")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the results as JSON on stdout (the table goes to stderr).")] = False,
    device: Annotated[int, typer.Option(min=0, help="CUDA device index.")] = 0,
) -> None:
    """Validate and time every variant of an op (and its library baseline) over shapes.

    Examples: `cudabench run reduce --shape 442368x128`, `cudabench run reduce --shape 2^30
    --variant float4`, `cudabench run configs/reduce.yaml`. Exit status: 0 all correct,
    1 some row failed (FAIL, COMPILE_ERROR, CRASH, ERROR), 2 bad usage, 130 interrupted
    (the results file keeps the finished rows).
    """
    try:
        config = _config_for(target, shape)
        shapes = tuple(parse_shape(s) for s in shape) if shape else None
    except (ConfigError, ShapeError) as exc:
        fail_usage(str(exc))
    timing = _timing(config.timing, cold, interleave, min_samples, min_time, max_time, warmup)
    plans: list[tuple[Benchmark, CaseJob]] = []
    problems: list[str] = []
    for bench in config.benchmarks:
        try:
            op = get_op(bench.op)
        except UnknownName as exc:
            fail_usage(f"{config.source}: {exc}")
        found, bad = variants_for(op.name, kernels)
        problems += bad
        chosen, baselines = select(found, list(variant or bench.variants), list(op.baselines()))
        for s in shapes or bench.shapes:
            try:
                op.check_shape(s)
            except ValueError as exc:
                fail_usage(f"shape {'x'.join(map(str, s))}: {exc}")
            case = Case(op=op.name, shape=s)
            plans.append((bench, CaseJob(case, tuple(chosen), tuple(baselines), timing)))
    for problem in problems:
        err.print(f"[red]error:[/] {problem}", soft_wrap=True)

    try:
        backend = open_backend(device=device)
    except BackendUnavailable as exc:
        fail_usage(str(exc))
    info = backend.device_info()
    for _, job in plans:
        need = get_op(job.case.op).device_bytes(job.case.shape)
        if need > info.total_memory_bytes:
            fail_usage(f"shape {job.case.shape_text} needs {need / 1e9:.1f} GB of GPU memory; "
                       f"{info.name} has {info.total_memory_bytes / 1e9:.1f} GB")  # fmt: skip
    op_label = "+".join(dict.fromkeys(job.case.op for _, job in plans))
    started = now_utc()
    stem = result_stem(output, op_label, started)
    try:
        check_writable(stem)
    except ResultsError as exc:
        fail_usage(str(exc))
    versions = backend.versions()
    meta = RunMeta(
        device=info, timing_mode=timing.mode, command=_command_line(ctx),
        started=started, cudabench_version=__version__,
        cupy_version=versions.get("cupy", ""), nvcc_version=nvcc_version(),
        git_sha=git_sha(), timing=timing, complete=False,
    )  # fmt: skip

    rows: list[ResultRow] = []  # finished cases, speedups filled in
    pending: list[ResultRow] = []  # rows of the case under way
    total = sum(len(job.variants) + len(job.baselines) for _, job in plans)
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    )  # fmt: skip
    try:
        with progress:
            task = progress.add_task("starting", total=total)

            class Observer:
                def started(self, case: Case, name: str) -> None:
                    progress.update(task, description=f"{case.op} {case.shape_text} {name}")

                def finished(self, row: ResultRow) -> None:
                    progress.advance(task)
                    pending.append(row)
                    write_results(stem, meta, rows + pending)  # every row saved as it ends

            runner = Runner(backend, Observer())
            for _, job in plans:
                rows += runner.run_job(job)
                pending.clear()
                write_results(stem, meta, rows)
    except KeyboardInterrupt:
        saved = rows + pending
        write_results(stem, meta, saved)  # complete: false
        err.print(f"interrupted: {len(saved)} finished rows kept in {stem.with_suffix('.json')} "
                  "(marked incomplete)", soft_wrap=True, markup=False)  # fmt: skip
        raise typer.Exit(130) from None
    meta = dataclasses.replace(meta, complete=True)
    csv_path, json_path = write_results(stem, meta, rows)

    table = results_table(rows, meta, op_label)
    (err if as_json else out).print(table)
    if as_json:
        out.print_json(json.dumps(results_document(meta, rows)))
    failed = failure_summary(rows)
    console = err
    console.print(f"results: {csv_path}  {json_path}", soft_wrap=True)
    if plans:
        job = plans[0][1]
        if job.variants:
            console.print(
                "profile one case: ncu --nvtx --nvtx-include "
                f"\"{ncu_filter(job.case.op, job.variants[0].name, job.case.shape_text)}\" "
                "-c 1 --clock-control none " + meta.command, soft_wrap=True, markup=False,
            )  # fmt: skip
    if failed or problems:
        console.print(f"[bold red]{len(failed) + len(problems)} failed:[/]")
        lines = problems + failed
        for line in lines[:SUMMARY_LINES]:
            console.print(f"  {line}", soft_wrap=True, markup=False)
        if len(lines) > SUMMARY_LINES:
            console.print(f"  ... and {len(lines) - SUMMARY_LINES} more (see the results file)")
        raise typer.Exit(1)
