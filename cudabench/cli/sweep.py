"""How `run` and `profile` render the sweep (cudabench/sweep.py, where the work is done): a
bad-usage SweepError becomes one line and exit 2, the progress bar follows the rows as they
end, Ctrl-C exits 130 with the finished rows kept, and the closing summary exits 1 when a
kernel row failed. The command line as the user could type it again lives here too.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudabench import sweep
from cudabench.backends.base import Backend
from cudabench.cli.common import err, fail_usage
from cudabench.history import History, HistoryError
from cudabench.pool import WorkerPool
from cudabench.report import failure_summary
from cudabench.spec import Case, ResultRow, RunMeta
from cudabench.sweep import Plan, in_process, on_workers, run_meta

__all__ = ["Plan", "apply_tuned", "command_line", "open_cluster", "open_history", "exit_with_summary", "in_process", "on_workers", "open_gpu",
           "open_workers", "parse_devices", "plan", "results_stem", "run_jobs", "run_meta",
           "show_pool_notes", "show_run_notes", "use_ceilings"]
SUMMARY_LINES = 20


def _usage(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """call(...), with a SweepError as one line and exit 2."""
    try:
        return call(*args, **kwargs)
    except sweep.SweepError as exc:
        fail_usage(str(exc))


def plan(target: str, shapes: list[str] | None, variants: list[str] | None,
         kernels: list[Path] | None, dtypes: list[str] | None = None,
         params: list[str] | None = None, **timing: object) -> Plan:  # fmt: skip
    return _usage(sweep.plan, target, shapes, variants, kernels, dtypes, params, **timing)


def apply_tuned(work: Plan, gpu: str) -> Plan:
    return _usage(sweep.apply_tuned, work, gpu)


def parse_devices(text: str) -> list[int] | None:
    return _usage(sweep.parse_devices, text)


def open_workers(devices: list[int] | None, timeout_s: float,
                 timer: str = "events") -> WorkerPool:  # fmt: skip
    return _usage(sweep.open_workers, devices, timeout_s, timer)


def open_cluster(address: str, timeout_s: float, gpu_model: str | None = None) -> Any:
    """A Dask cluster (cudabench/cluster.py); ClusterError is one line and exit 2."""
    from cudabench.cluster import Cluster, ClusterError

    try:
        return Cluster(address, timeout_s, gpu_model)
    except ClusterError as exc:
        fail_usage(str(exc))


def show_pool_notes(pool: Any) -> None:
    """What the pool noticed during the run (a cluster's lost workers), a line each."""
    for note in getattr(pool, "notes", ()):
        err.print(f"note: {note}", soft_wrap=True, markup=False)


def use_ceilings(execute: sweep.Execute, meta: RunMeta, versions: dict[str, str],
                 recalibrate: bool = False, output: Path | None = None,
                 history: History | None = None) -> RunMeta:  # fmt: skip
    """sweep.use_ceilings with a progress bar while it measures; a bad ceilings file is one
    line and exit 2, Ctrl-C exits 130."""
    def announce(text: str) -> None:
        err.print(f"note: {text}", soft_wrap=True, markup=False)

    with progress_bar(None) as bar:
        return _usage(sweep.use_ceilings, execute, meta, versions, recalibrate, announce, bar,
                      output, history)  # fmt: skip
    raise AssertionError("unreachable")  # progress_bar exits on the errors it catches


def show_run_notes(meta: RunMeta) -> None:
    """What the run could not do as asked (the clock it fell back to), a line each."""
    for note in meta.notes:
        err.print(f"note: {note}", soft_wrap=True, markup=False)


def open_gpu(device: int) -> Backend:
    return _usage(sweep.open_gpu, device)


def results_stem(output: Path | None, op_label: str, started: str) -> Path:
    return _usage(sweep.results_stem, output, op_label, started)


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


@contextlib.contextmanager
def progress_bar(total: int | None, multi_gpu: bool = False) -> Iterator[Bar]:
    """A progress bar on stderr that follows a sweep's rows (a Listener); inside it, Ctrl-C
    exits 130 and a pool that cannot go on exits 1, the finished rows kept either way."""
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    )  # fmt: skip
    with progress:
        bar = Bar(progress, progress.add_task("starting", total=total), multi_gpu)
        try:
            yield bar
        except sweep.Interrupted as exc:
            _stop(f"{exc} (marked incomplete)", 130)
        except sweep.SweepFailed as exc:
            _stop(f"[bold red]error:[/] {exc}", 1, markup=True)


class Bar:
    """A sweep Listener drawing the case and variant under way and the rows done."""

    def __init__(self, progress: Progress, task: Any, multi_gpu: bool) -> None:
        self.progress, self.task, self.multi_gpu = progress, task, multi_gpu

    def started(self, case: Case, name: str, device: int) -> None:
        where = f" [GPU {device}]" if self.multi_gpu else ""
        self.progress.update(self.task, description=f"{case.op} {case.shape_text} {case.dtype} "
                             f"{name}{where}")  # fmt: skip

    def finished(self, row: ResultRow) -> None:
        self.progress.advance(self.task)


def run_jobs(plan_: Plan, execute: sweep.Execute, stem: Path, meta: RunMeta,
             multi_gpu: bool = False, history: History | None = None,
             tag: str = "") -> sweep.Sweep:  # fmt: skip
    """sweep.run_jobs with a progress bar on stderr (see progress_bar)."""
    with progress_bar(plan_.rows_expected, multi_gpu) as bar:
        return sweep.run_jobs(plan_, execute, stem, meta, bar, history, tag)
    raise AssertionError("unreachable")  # progress_bar exits on the errors it catches


def open_history(db: Path | None) -> tuple[History | None, str]:
    """The history database, or (None, why) after saying why in one line: a database that
    cannot be used does not stop the run (its files are written), but the command then
    exits 2 (exit_with_summary)."""
    try:
        return sweep.open_history(db), ""
    except HistoryError as exc:
        err.print(f"[bold red]error:[/] {exc}; the results files are still written",
                  soft_wrap=True)  # fmt: skip
        return None, str(exc)


def _stop(message: str, code: int, markup: bool = False) -> NoReturn:
    err.print(message, soft_wrap=True, markup=markup)
    raise typer.Exit(code)


def exit_with_summary(rows: list[ResultRow], problems: list[str], history_error: str = "") -> None:
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
    if history_error:
        err.print(f"[bold red]error:[/] {history_error}", soft_wrap=True)
        raise typer.Exit(2)
    if failed or problems:
        raise typer.Exit(1)
