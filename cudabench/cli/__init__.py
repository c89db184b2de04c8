"""The command-line interface: one module per command, each thin (parse, call, render).

Only this package prints. A user mistake is one line on stderr and exit status 2, never a
traceback; a failed kernel is a row, and makes `run` exit 1 at the end.
"""

from __future__ import annotations

import typer

from cudabench.cli import check_cmd, compare_cmd, list_cmd, profile_cmd, report_cmd, run_cmd

app = typer.Typer(
    name="cudabench",
    help=(
        "Is my CUDA kernel right, how fast is it against the hardware and the vendor library, "
        "and why. Compiles kernel variants from kernels/<op>/*.cu (and your own with "
        "--kernels), validates each against a float64 reference, times it honestly, and "
        "writes throughput tables to the terminal and to results/."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("list")(list_cmd.list_command)
app.command("check")(check_cmd.check_command)
app.command("run")(run_cmd.run_command)
app.command("profile")(profile_cmd.profile_command_cli)
app.command("compare")(compare_cmd.compare_command)
app.command("report")(report_cmd.report_command)


def main() -> None:
    app()
