"""The command-line interface: one module per command, each thin (parse, call, render).

Only this package prints. A user mistake is one line on stderr and exit status 2, never a
traceback; a failed kernel is a row, and makes `run` exit 1 at the end.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Collection
from typing import Annotated, Any, Optional

import typer
import typer.core

from cudabench.cli import (
    ceilings_cmd,
    check_cmd,
    cluster_cmd,
    compare_cmd,
    history_cmd,
    list_cmd,
    new_cmd,
    profile_cmd,
    report_cmd,
    run_cmd,
    tolerance_cmd,
    tune_cmd,
    verify_cmd,
)
from cudabench.cli.common import err, error_line, fail_usage
from cudabench.core.errors import UsageError
from cudabench.core.version import __version__

# A Ctrl-C while these modules load is cudabench/__init__.py's `_command` (the script's
# entry): one line and exit 130 from the first instant, like a Ctrl-C in a command.


class _WholeSummaries(typer.core.TyperGroup):
    """A command list that gives each command's first sentence whole, wrapped to the
    terminal, where click cuts it with "..." to fit one line; and a Ctrl-C that a command
    did not handle itself is one line, exit 130 (typer would exit 130 without a word)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            err.print("interrupted", markup=False)
            raise typer.Exit(130) from None

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """The command line read (typer turns a Ctrl-C here into a silent exit 130)."""
        try:
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:
            err.print("interrupted", markup=False)
            raise typer.Exit(130) from None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    name="cudabench",
    cls=_WholeSummaries,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    # Plain help: rich's option tables cut long names, metavars and paths with "…" at 80
    # columns, and read `pip install -e '.[cluster]'` in a help text as markup (printing
    # '.'). Click's formatter wraps every word instead, and prints text as written.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


def _show_version(value: bool) -> None:
    if value:
        print(f"cudabench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Is my CUDA kernel right, how fast is it against the hardware and the vendor library,
    and why. Compiles kernel variants from kernels/<op>/*.cu (and your own with --kernels),
    validates each against a float64 reference, times it honestly, and writes throughput
    tables to the terminal and to results/."""


def one_line(command: Callable[..., None]) -> Callable[..., None]:
    """The one place cudabench's own bad-usage errors (errors.UsageError: a bad shape, no GPU,
    an unwritable folder ...) become one line on stderr and exit status 2, for every command."""

    @functools.wraps(command)
    def guarded(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except UsageError as exc:
            fail_usage(str(exc))

    return guarded


_COMMANDS: list[tuple[str, Callable[..., None]]] = [
    ("list", list_cmd.list_command),
    ("check", check_cmd.check_command),
    ("run", run_cmd.run_command),
    ("tune", tune_cmd.tune_command),
    ("verify", verify_cmd.verify_command),
    ("profile", profile_cmd.profile_command_cli),
    ("ceilings", ceilings_cmd.ceilings_command),
    ("compare", compare_cmd.compare_command),
    ("report", report_cmd.report_command),
    ("history", history_cmd.history_command),
    ("import", history_cmd.import_command),
    ("tolerance", tolerance_cmd.tolerance_command),
]
for name, command in _COMMANDS:
    app.command(name)(one_line(command))
app.add_typer(cluster_cmd.app, name="cluster", cls=_WholeSummaries)
app.add_typer(new_cmd.app, name="new", cls=_WholeSummaries)


try:  # typer 0.2x vendors click; older typers use click itself
    from typer._click import exceptions as click  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on the installed typer
    import click.exceptions as click  # type: ignore[no-redef]


def usage_line(exc: click.UsageError, words: list[str], commands: Collection[str]) -> str:
    """A click usage error as one line: what was wrong, and where to read more (the
    subcommand's help when the command line names one, as `run reduce -s` with no shape,
    which click reports without its context)."""
    message = " ".join(exc.format_message().split())
    if exc.ctx is not None:
        command = exc.ctx.command_path
    else:
        command = f"cudabench {words[0]}" if words and words[0] in commands else "cudabench"
    return f"{message} (see {command} --help)"


def main(argv: list[str] | None = None) -> None:
    """The `cudabench` command: typer's app, with usage errors as one line (exit 2) rather
    than a framed box, and Ctrl-C anywhere (a command's start included) one line, exit 130."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        err.print("interrupted", markup=False)
        sys.exit(130)


def _main(argv: list[str] | None) -> None:
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="cudabench", standalone_mode=False)
    except click.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else "")
        sys.exit(0)
    except click.UsageError as exc:
        words = list(sys.argv[1:] if argv is None else argv)
        commands = getattr(command, "commands", {})
        err.print(error_line(usage_line(exc, words, commands)), soft_wrap=True)
        sys.exit(2)
    except click.ClickException as exc:  # a bad file argument and the like
        err.print(error_line(" ".join(exc.format_message().split())), soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Abort:  # click's name for an EOF at a prompt
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
