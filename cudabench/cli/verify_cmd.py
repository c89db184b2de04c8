"""`cudabench verify`: the smallest shape where each variant is wrong (usecases/verify.py does
the work), rendered as a table with the `cudabench run` line that reproduces each; and the
short pass `run --verify` makes before timing."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from cudabench.cli.common import (
    KERNELS_OPTION_HELP,
    DbOption,
    ForceOption,
    OpsOption,
    err,
    out,
    parse_params,
    placement,
)
from cudabench.cli.render import Terminal, command_line, error
from cudabench.core.shapes import shape_text
from cudabench.usecases import verify as usecase
from cudabench.usecases.flow import Interrupted, Recording
from cudabench.verification.search import (
    BROKEN,
    EXAMPLES,
    NOT_HERE,
    UNTESTED,
    VERIFIED,
    WRONG_AT,
    VariantVerdict,
)


def verdict_table(verdicts: list[VariantVerdict], title: str) -> Table:
    """A line per variant and dtype: verified over N shapes (the smallest and largest that
    ran), or wrong at a shape with the row's status and detail."""
    table = Table(title=title, title_justify="left", header_style="bold")
    for name in ("variant", "dtype", "verdict", "shapes", "smallest", "largest", "status", "detail"):
        table.add_column(name, justify="right" if name == "shapes" else "left", overflow="fold")
    for v in verdicts:
        found = v.verdict
        row = v.wrong_row
        if found.state == WRONG_AT and found.wrong is not None:
            text, style = f"wrong at {shape_text(found.wrong.shape)}", "bold red"
        elif found.state == BROKEN:
            text, style = BROKEN, "bold red"
        elif found.state == VERIFIED:
            text, style = VERIFIED if found.complete else "verified (budget ran out)", "green"
        elif found.state == NOT_HERE:
            text, style = NOT_HERE, "yellow"
        else:
            text, style = f"{UNTESTED}: no shape ran ({found.untried} N/A or skipped)", "yellow"
        table.add_row(
            v.label,
            v.dtype,
            text,
            str(found.tried),
            shape_text(found.smallest) if found.smallest else "",
            shape_text(found.largest) if found.largest else "",
            row.status.value if row is not None else "",
            row.error if row is not None else found.untried_why,
            style=style,
        )
    return table


def show_verdicts(verdicts: list[VariantVerdict], title: str, console: Console = out) -> None:
    """The table, then how each wrong shape was found and the line that runs it again, on
    `console` (stdout, the command's results; stderr where stdout holds JSON)."""
    console.print(verdict_table(verdicts, title))
    for v in verdicts:
        found = v.verdict
        if found.wrong is not None and found.found is not None:
            first, smallest = shape_text(found.found.shape), shape_text(found.wrong.shape)
            how = f"found among the {found.phase} shapes"
            how += f" at {first}, then shrunk" if first != smallest else ""
            tried = f"{found.tried} shape{'s' if found.tried != 1 else ''}"
            console.print(
                f"{v.label} {v.dtype}: wrong at {smallest} ({how}; {tried} in {found.elapsed_s:.1f} s)",
                soft_wrap=True,
                markup=False,
            )
            console.print(f"  reproduce: {v.reproduce}", soft_wrap=True, markup=False)
        elif found.state == BROKEN and found.broken is not None and found.broken.row is not None:
            console.print(f"{v.label} {v.dtype}: {found.broken.row.error}", soft_wrap=True, markup=False)


def verify_command(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="An op name (e.g. reduce, or your own with --ops).")],
    variant: Annotated[
        Optional[list[str]], typer.Option("--variant", "-v", help="Only these variants (repeatable).")
    ] = None,
    dtype: Annotated[
        Optional[list[str]],
        typer.Option("--dtype", "-d", help="Element type(s), as for run (default float32; all: every one)."),
    ] = None,
    param: Annotated[
        Optional[list[str]],
        typer.Option(
            "--param",
            "-p",
            help="Launch parameters NAME=V1,V2,... (repeatable): each configuration is verified "
            "on its own (default: the header's defaults).",
        ),
    ] = None,
    budget: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="Seconds per variant (and dtype) at most: the edge shapes, the random search "
            "and the shrinking stop when it is spent (a shape under way finishes). Not counted: "
            "each variant's first checks (its compile) and the warm-up they carry (small shapes "
            "whose checks compile CuPy's kernels where its cache lacks them).",
        ),
    ] = usecase.BUDGET_S,
    examples: Annotated[
        int, typer.Option(min=0, help="Random shapes drawn at most per variant, after the edge shapes.")
    ] = EXAMPLES,
    seed: Annotated[int, typer.Option(help="Seed of the random search.")] = 0,
    kernels: Annotated[Optional[list[Path]], typer.Option(help=KERNELS_OPTION_HELP)] = None,
    ops: OpsOption = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="A folder (made if missing) for the rows of every shape checked, or NAME.json / "
            "NAME.csv for those files (default results/<timestamp>_verify_<op>.csv/.json).",
        ),
    ] = None,
    force: ForceOption = False,
    tag: Annotated[str, typer.Option(help="A name for this run in the history database.")] = "",
    db: DbOption = None,
    devices: Annotated[
        str, typer.Option("--devices", "--device", help="GPUs to check on: 0, 0,1 or all.")
    ] = "0",
    timeout: Annotated[
        float,
        typer.Option(
            min=1.0,
            help="Seconds one shape's check may take (the first compiles the variant) before "
            "its worker is killed and the shape is TIMEOUT: wrong.",
        ),
    ] = usecase.TIMEOUT_S,
) -> None:
    """Find, for each variant of an op, the smallest shape where it is wrong, before anyone
    times it.

    Checks each variant against the float64 reference (nothing is timed) at the shapes that
    break kernels most often (1, 2, 31, 32, 33, the block size and its neighbours, the vector
    width's non-multiples, primes, a grid of one block, the largest a grid dimension takes,
    sizes past 2^31 elements where the memory allows), two dims at once (one at those values,
    the other at each remainder of the vector width), within the header's `requires:`, then
    at random shapes (Hypothesis), and shrinks a wrong one to a shape no larger than twice the
    smallest. Examples: `cudabench verify reduce`, `cudabench verify softmax -v block_reg -d
    bfloat16 --budget 30`. Exit status: 0 every variant verified (or not on this machine: its
    GPU or a module it needs, the table says which), 1 a variant is wrong, does not compile,
    or is untested (N/A or skipped at every shape: the table says why), 2 bad usage, 130
    interrupted (the checked rows are kept).
    """
    request = usecase.VerifyRequest(
        target=target,
        variants=tuple(variant or ()),
        dtypes=tuple(dtype or ()),
        params=parse_params(param),
        kernels=tuple(kernels or ()),
        ops=tuple(ops or ()),
        budget_s=budget,
        examples=examples,
        seed=seed,
        placement=placement(devices, timeout, None, None),
        recording=Recording(output, db, tag, force),
        command=command_line(ctx),
    )
    try:
        outcome = usecase.verify(request, Terminal())
    except Interrupted as exc:  # the checked rows are kept, marked incomplete
        err.print(f"{exc} (marked incomplete)", soft_wrap=True, markup=False)
        raise typer.Exit(130) from None
    title = f"verify {outcome.op}" + (f" on {outcome.device.name}" if outcome.device else "")
    show_verdicts(outcome.verdicts, f"{title}: {budget:g} s a variant's search at most")
    err.print(f"results: {outcome.csv.resolve()}  {outcome.json.resolve()}", soft_wrap=True, markup=False)
    if outcome.history_error:
        error(outcome.history_error)
        raise typer.Exit(2)
    if outcome.wrong or outcome.untested:
        raise typer.Exit(1)
