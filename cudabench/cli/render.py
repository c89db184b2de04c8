"""How the commands render a use case as it works and what it gave (cudabench/usecases/ does
the work): `Terminal`, the observer the CLI passes (notes and errors on stderr, the progress
bar that follows the rows as they end, Ctrl-C as exit 130 with the finished rows kept), the
notes, and the closing summary that exits 1 when a kernel row failed (2 when the history
database failed). The command line as the user could type it again lives here too.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cudabench.cli.common import err, error_line
from cudabench.core.records import Case, ResultRow
from cudabench.present.tables import failure_summary
from cudabench.usecases.flow import Failed, Interrupted, SweepFailed

SUMMARY_LINES = 20


def note(text: str) -> None:
    """One `note:` line on stderr, printed literally."""
    err.print(f"note: {text}", soft_wrap=True, markup=False)


def error(text: str) -> None:
    """One red `error:` line on stderr; the text printed literally."""
    err.print(error_line(text), soft_wrap=True)


def show_run_notes(notes: Iterable[str]) -> None:
    """What the run could not do as asked (the clock it fell back to, lost workers)."""
    for line in notes:
        note(line)


class Terminal:
    """The CLI's observer of a use case (usecases/observe.py): notes and errors as lines on
    stderr, the rows on a progress bar, a long step behind a spinner."""

    def note(self, text: str) -> None:
        note(text)

    def error(self, text: str) -> None:
        error(text)

    def say(self, text: str) -> None:
        err.print(text, soft_wrap=True, markup=False)

    def progress(self, total: int | None, devices: int) -> contextlib.AbstractContextManager[Bar]:
        return progress_bar(total, devices > 1)

    def working(self, text: str) -> contextlib.AbstractContextManager[Any]:
        return err.status(text)


def exit_failed(exc: Failed) -> NoReturn:
    """A use case that ran but could not give its answer: its line, its details, exit 1."""
    error(exc.message)
    for line in exc.details:
        err.print(f"  {line}", markup=False, soft_wrap=True)
    raise typer.Exit(1)


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
    exits 130 and a pool that cannot go on exits 1, the finished rows kept either way. On a
    stderr that is not a terminal (a CI log, a pipe) a line every LOG_EVERY_S instead."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    with progress:
        bar = Bar(progress, progress.add_task("starting", total=total), multi_gpu)
        try:
            yield bar
        except Interrupted as exc:
            _stop(f"{exc} (marked incomplete)", 130)
        except SweepFailed as exc:
            error(str(exc))
            raise typer.Exit(1) from None


class Bar:
    """A sweep Listener drawing the case and variant under way and the rows done; without a
    terminal to draw on, a `progress:` line every LOG_EVERY_S seconds of the run."""

    LOG_EVERY_S = 10.0

    def __init__(self, progress: Progress, task: Any, multi_gpu: bool) -> None:
        self.progress, self.task, self.multi_gpu = progress, task, multi_gpu
        self.start = self.logged = time.monotonic()

    def started(self, case: Case, name: str, device: int) -> None:
        where = f" [GPU {device}]" if self.multi_gpu else ""
        self.progress.update(self.task, description=f"{case.op} {case.shape_text} {case.dtype} {name}{where}")

    def finished(self, row: ResultRow) -> None:
        self.progress.advance(self.task)
        now = time.monotonic()
        if self.progress.disable and now - self.logged >= self.LOG_EVERY_S:
            self.logged = now
            task = self.progress.tasks[0]
            total = f"/{task.total:g}" if task.total else ""
            line = f"progress: {task.completed:g}{total} rows, {now - self.start:.0f} s ({row.key})"
            err.print(line, soft_wrap=True, markup=False)

    def announce(self, text: str) -> None:
        """A note printed above the bar (the ceilings being measured first)."""
        self.progress.console.print(f"note: {text}", soft_wrap=True, markup=False)


def _stop(message: str, code: int) -> NoReturn:
    err.print(message, soft_wrap=True, markup=False)
    raise typer.Exit(code)


def exit_with_summary(rows: list[ResultRow], problems: list[str], history_error: str = "") -> None:
    """Name the failed rows and kernel files and exit 1, if there are any. A library
    baseline that fails validation (a 16-bit expression that rounds after every step, say) is
    named too, but it is the library's result, not the user's kernel: it does not fail the
    run. A history database that failed exits 2."""
    for line in failure_summary(rows, baselines=True):
        note(f"library baseline {line}")
    failed = failure_summary(rows)
    if failed or problems:
        err.print(f"[bold red]{len(failed) + len(problems)} failed:[/]")
        lines = problems + failed
        for line in lines[:SUMMARY_LINES]:
            err.print(f"  {line}", soft_wrap=True, markup=False)
        if len(lines) > SUMMARY_LINES:
            err.print(f"  ... and {len(lines) - SUMMARY_LINES} more (see the results file)")
    if history_error:
        error(history_error)
        raise typer.Exit(2)
    if failed or problems:
        raise typer.Exit(1)
