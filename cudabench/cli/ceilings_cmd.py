"""`cudabench ceilings`: measure what this GPU can actually move and compute (the ceilings use
case, usecases/measure_ceilings.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cudabench.cli.common import (
    ForceOption,
    MaxTimeOption,
    MinSamplesOption,
    MinTimeOption,
    WarmupOption,
    err,
    one_device,
    out,
)
from cudabench.cli.render import Terminal, command_line, exit_failed
from cudabench.present.tables import ceilings_table
from cudabench.usecases.flow import DEFAULT_TIMEOUT_S, Failed
from cudabench.usecases.measure_ceilings import CeilingsRequest, measure_ceilings


def ceilings_command(
    ctx: typer.Context,
    recalibrate: Annotated[
        bool,
        typer.Option(
            "--recalibrate",
            help="Measure again even when this GPU model, driver and memory clock have ceilings kept.",
        ),
    ] = False,
    size: Annotated[
        Optional[int],
        typer.Option(
            min=1,
            help="float32 elements per array of the stream ops (default: 8x the L2 size, the least allowed).",
        ),
    ] = None,
    devices: Annotated[
        str, typer.Option("--devices", "--device", help="The GPU to measure (one index).")
    ] = "0",
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds a variant may take before its worker is killed.")
    ] = DEFAULT_TIMEOUT_S,
    min_samples: MinSamplesOption = None,
    min_time: MinTimeOption = None,
    max_time: MaxTimeOption = None,
    warmup: WarmupOption = None,
    force: ForceOption = False,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="A folder (made if missing) for the measurement's rows, or NAME.json / NAME.csv "
            "for those files (default results/<timestamp>_ceilings.csv/.json).",
        ),
    ] = None,
) -> None:
    """Measure what this GPU can actually move in each traffic mix (read, triad = 2 reads + 1
    write, copy, write) and its fp32 FMA rate, with catalogue ops over arrays of 8x the L2
    size (kernels/stream_*/, kernels/fma/) beside the library references (CUB's sum,
    cudaMemcpy, cudaMemset; reduce's, add's and relu's CuPy and torch), each mix's ceiling the
    best of all its rows, and keep them for `run`'s `% ceiling` column
    (results/ceilings.json, or $CUDABENCH_CEILINGS). Kept ceilings of this GPU model, driver and memory
    clock are shown without measuring unless --recalibrate. Exit status: 0, 1 if a mix got no
    correct row, 2 bad usage.
    """
    request = CeilingsRequest(
        device=one_device(devices, "the ceilings are one GPU's"),
        timeout_s=timeout,
        recalibrate=recalibrate,
        size=size,
        timing=dict(min_samples=min_samples, min_time_s=min_time, max_time_s=max_time, warmup=warmup),
        output=output,
        force=force,
        command=command_line(ctx),
    )
    try:
        done = measure_ceilings(request, Terminal())
    except Failed as exc:
        exit_failed(exc)
    if done.measured:
        err.print(
            f"results: {done.csv_path}  {done.json_path}\nkept in {done.kept_in}",
            soft_wrap=True,
            markup=False,
        )
    out.print(ceilings_table(done.entry, done.info, done.rows))
