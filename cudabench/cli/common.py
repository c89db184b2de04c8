"""What the commands share: consoles, the one-line usage error, the options several take,
and reading their text into the use cases' typed input (shapes, launch parameters, devices)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.text import Text

from cudabench.core.errors import SweepError
from cudabench.core.records import Shape
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.ops import registry
from cudabench.ops.space import SpaceError, parse_param_option
from cudabench.usecases.flow import Placement, Selection, parse_devices

# Wide tables when piped (rich would use 80 columns); a terminal keeps its own width.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 160)

KERNELS_OPTION_HELP = (
    "Extra folder of .cu variants (files directly in it, or in <folder>/<op>/); "
    "they join the built-in ones. Repeatable."
)
OPS_OPTION_HELP = (
    "A folder of your own ops: op folders (<folder>/<op>/op.py beside its variants), or one "
    "op's folder; they join the catalogue. Repeatable; $CUDABENCH_OPS (folders joined by "
    "os.pathsep) adds more."
)
OpsOption = Annotated[Optional[list[Path]], typer.Option("--ops", help=OPS_OPTION_HELP)]


# Options several commands share, declared once.
DbOption = Annotated[
    Optional[Path],
    typer.Option(help="The history database (default results/cudabench.db, or $CUDABENCH_DB)."),
]
ClusterOption = Annotated[
    Optional[str],
    typer.Option(
        help="Run on a Dask cluster instead of this host's GPUs: a scheduler address "
        "(tcp://host:8786; workers started with --resources GPU=1) or 'local' (one worker per GPU "
        "here, dask-cuda); each node compiles its own kernels. Needs pip install -e '.[cluster]'."
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Let --output replace an earlier run's results files (refused otherwise)."),
]
# How many samples a row takes (the stopping rule, measure.py): run's and ceilings' options.
MinSamplesOption = Annotated[
    Optional[int], typer.Option(min=1, help="Samples per row at least (default 10).")
]
MinTimeOption = Annotated[
    Optional[float],
    typer.Option(min=0.0, help="Seconds of GPU time the samples add up to, at least (default 0.2)."),
]
MaxTimeOption = Annotated[
    Optional[float],
    typer.Option(min=0.0, help="Seconds of GPU time per row at most, above 0 (default 10)."),
]
WarmupOption = Annotated[
    Optional[int], typer.Option(min=0, help="Warm-up launches before the samples (default 3).")
]
TimerOption = Annotated[
    Optional[str],
    typer.Option(
        "--timer",
        help="The clock: events (default: CUDA events around each sample, within about "
        "1% of Nsight Compute from 50 us up), cupti (each launch's own kernels, first start to "
        "last end, from CUPTI's records: no launch gaps or event records, one sample a launch; "
        "exit 2 if CUPTI cannot start), both (CUPTI's time with the events' beside it and their "
        "difference) or auto (cupti where CUPTI starts, else events with a note). Rows record "
        "their clock; compare refuses to judge across clocks.",
    ),
]
# Telemetry and the card's state (telemetry.py, clocklock.py): run's and tune's options.
DropThrottledOption = Annotated[
    Optional[bool],
    typer.Option(
        "--drop-throttled/--keep-throttled",
        help="Leave out of each row's statistics the samples "
        "the GPU took while slowed for power or heat (NVML's slowdown reasons and counters); the "
        "row says how many. Default: keep them, and note a row with more than 3% slowed.",
    ),
]
SettleOption = Annotated[
    Optional[str],
    typer.Option(
        "--settle",
        help="Warm up until the SM clock's median over consecutive 50 ms windows "
        "stops moving (within 15 MHz twice; at most 5 s): on, off, or auto (default: on for --cold "
        "rows of launches from 50 us up). The row records the seconds it took.",
    ),
]
CooldownOption = Annotated[
    Optional[int],
    typer.Option(
        "--cooldown",
        min=0,
        help="Before each variant, wait idle until the GPU is at or below "
        "this temperature in C (at most 120 s; the row records the wait). Default 0: no wait.",
    ),
]
ClocksOption = Annotated[
    Optional[str],
    typer.Option(
        "--clocks",
        help="The SM clock for the run: default (the driver's), base, max or a "
        "number of MHz, locked through NVML (needs root or permission; where refused, the run "
        "goes on at the driver's clocks and says so) and reset afterwards, also on Ctrl-C or a "
        "crash. Recorded in the run's fingerprint: compare refuses runs locked differently.",
    ),
]
FillOption = Annotated[
    Optional[str],
    typer.Option(
        "--fill",
        help="The inputs: random (default), zeros or ones. A zero fill draws less "
        "power and can run at higher clocks under a power cap; results stay checked.",
    ),
]
EnergyOption = Annotated[
    Optional[bool],
    typer.Option(
        "--energy/--no-energy",
        help="Energy per call (mJ), average power (W) and GB/J (GFLOP/J) "
        "for every OK hot row: the card's energy counter across back-to-back calls queued after "
        "the samples, from one of its updates to a later one (at least 50 ms). Off by default: "
        "it adds that window to every row.",
    ),
]
GpuModelOption = Annotated[
    Optional[str],
    typer.Option(
        help="With --cluster: only the workers whose GPU model's name contains this (e.g. H200); "
        "needed when the cluster's GPUs differ."
    ),
]


def error_line(message: str, label: str = "error:", style: str = "bold red") -> Text:
    """`error: <message>` with only the label styled: the message (paths, user text such as
    `[x].yaml` or `'.[cluster]'`) is printed as written, never read as rich markup."""
    return Text.assemble((label, style), " ", message)


def fail_usage(message: str) -> NoReturn:
    """Bad usage: one line on stderr, exit status 2."""
    err.print(error_line(message), soft_wrap=True)
    raise typer.Exit(2)


def use_ops(folders: list[Path] | None) -> None:
    """The command's --ops folders join the catalogue (registry.use_ops); exit 2 if one is
    missing."""
    try:
        registry.use_ops(folders)
    except registry.OpsFolderError as exc:
        fail_usage(str(exc))


def parse_shapes(texts: list[str] | None) -> tuple[Shape, ...] | None:
    """`--shape` texts (442368x128, 2^30, 1e6) as tuples; SweepError (one line) for one
    that does not read."""
    if not texts:
        return None
    try:
        return tuple(parse_shape(text) for text in texts)
    except ShapeError as exc:
        raise SweepError(str(exc)) from None


def parse_params(texts: list[str] | None) -> dict[str, tuple[int, ...]]:
    """`--param BLOCK=128,256` options -> {"BLOCK": (128, 256)} (a name given twice: its
    values joined); SweepError (one line) if one is malformed."""
    found: dict[str, tuple[int, ...]] = {}
    for text in texts or []:
        try:
            name, values = parse_param_option(text)
        except SpaceError as exc:
            raise SweepError(str(exc)) from None
        found[name] = tuple(dict.fromkeys(found.get(name, ()) + values))
    return found


def selection(
    target: str,
    shape: list[str] | None,
    variant: list[str] | None,
    dtype: list[str] | None,
    param: list[str] | None,
    kernels: list[Path] | None,
    ops: list[Path] | None,
    **timing: object,
) -> Selection:
    """A command's target and options as the use cases take them (text read here)."""
    return Selection(
        target,
        shapes=parse_shapes(shape),
        variants=tuple(variant) if variant else None,
        dtypes=tuple(dtype) if dtype else None,
        params=parse_params(param),
        kernels=tuple(kernels or ()),
        ops=tuple(ops or ()),
        timing=timing,
    )


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the command line gave the parameter `name`, not its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def placement(
    devices: str,
    timeout: float,
    cluster: str | None = None,
    gpu_model: str | None = None,
    *,
    devices_given: bool = False,
) -> Placement:
    """`--devices 0,1` (or all), --timeout, --cluster and --gpu-model as a Placement; exit 2
    for --devices given beside --cluster (`devices_given`: the command line named them)."""
    if cluster:
        if devices_given:
            fail_usage(
                f"--devices {devices!r} with --cluster: --cluster runs on the cluster's GPUs "
                "(--gpu-model picks among them), --devices picks this host's; give one or the other"
            )
        return Placement(timeout_s=timeout, cluster=cluster, gpu_model=gpu_model)
    return Placement(parse_devices(devices), timeout, gpu_model=gpu_model)


def one_device(text: str, why: str) -> int:
    """`--devices` of a command that takes one GPU (`why` says why); exit 2 for anything but
    one index, `all` and lists included."""
    try:
        chosen = parse_devices(text)
    except SweepError:
        chosen = None
    if chosen is None or len(chosen) != 1:
        fail_usage(f"--devices {text!r}: give one GPU index, like 0 or 1 ({why})")
    return chosen[0]
