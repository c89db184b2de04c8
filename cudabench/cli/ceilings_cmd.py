"""`cudabench ceilings`: measure what this GPU can actually move and compute (ceilings.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from cudabench.cli.common import (
    ForceOption,
    MaxTimeOption,
    MinSamplesOption,
    MinTimeOption,
    WarmupOption,
    err,
    fail_usage,
    out,
)
from cudabench.cli.render import command_line, error, note, progress_bar
from cudabench.core.records import TimingOptions
from cudabench.execution.pool import DEFAULT_TIMEOUT_S
from cudabench.execution.session import Local, Session, parse_devices
from cudabench.present.tables import ceilings_table
from cudabench.record import ceilings
from cudabench.record.results import stem_file


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
            help="Folder or file stem for the measurement's rows (default "
            "results/<timestamp>_ceilings.csv/.json).",
        ),
    ] = None,
) -> None:
    """Measure what this GPU can actually move in each traffic mix (read, triad = 2 reads + 1
    write, copy, write) and its fp32 FMA rate, with catalogue ops over arrays of 8x the L2
    size (kernels/stream_*/, kernels/fma/) beside the library references (CUB's sum,
    cudaMemcpy, cudaMemset; reduce's, add's and relu's CuPy and torch), each mix's ceiling the
    best of all its rows, and keep them for `run`'s `% ceiling` column (results/
    ceilings.json, or $CUDABENCH_CEILINGS). Kept ceilings of this GPU model, driver and memory
    clock are shown without measuring unless --recalibrate. Exit status: 0, 1 if a mix got no
    correct row, 2 bad usage.
    """
    given = dict(min_samples=min_samples, min_time_s=min_time, max_time_s=max_time, warmup=warmup)
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    timing = dataclasses.replace(TimingOptions(), **changes)
    chosen = parse_devices(devices)
    if chosen is None or len(chosen) != 1:
        fail_usage(f"--devices {devices!r}: give one GPU index (the ceilings are one GPU's)")
    path = ceilings.cache_path()
    if path is None:
        fail_usage("CUDABENCH_CEILINGS is off: nowhere to keep the ceilings (unset it, or give a file)")
    try:
        kept = ceilings.load(path)
    except ceilings.CeilingsError as exc:
        fail_usage(f"{exc} (move it away, or set CUDABENCH_CEILINGS to another file)")
    with Session.open(Local(chosen, timeout)) as session:
        entry = ceilings.lookup(kept, session.info)
        rows = None
        if entry is None or recalibrate or size is not None:
            why = ceilings.stale(kept, session.info)
            if why:
                note(f"{why}: measuring again")
            with progress_bar(None) as bar:
                try:
                    entry, done = session.calibrate(size, output, bar, command_line(ctx), timing, force=force)
                except ceilings.CeilingsError as exc:  # a mix without a correct row
                    error(str(exc))
                    raise typer.Exit(1) from None
            rows = done.rows
            err.print(
                f"results: {stem_file(done.stem, '.csv')}  {stem_file(done.stem, '.json')}\nkept in {path}",
                soft_wrap=True,
                markup=False,
            )
    out.print(ceilings_table(entry, session.info, rows))
