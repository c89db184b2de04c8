"""`cudabench cluster status`: the workers of a Dask cluster and their GPUs."""

from __future__ import annotations

import typer
from rich.table import Table

from cudabench.cli.common import fail_usage, out
from cudabench.core.errors import UsageError
from cudabench.usecases.cluster_status import cluster_workers

app = typer.Typer(help="A Dask cluster for --cluster: see its workers.", no_args_is_help=True)


@app.command("status")
def status_command(
    cluster: str = typer.Option(..., help="A scheduler address (tcp://host:8786), or 'local'."),
) -> None:
    """Each worker of the cluster: its host and GPU (model, SMs, memory), as cudabench's
    worker process on it sees them. Exit 2 when no scheduler answers."""
    try:  # a subcommand: the top level's one-line wrapper (cli/__init__.py) is not around it
        found = [(w.address, w.host, w.info) for w in cluster_workers(cluster)]
    except UsageError as exc:
        fail_usage(str(exc))
    table = Table(
        title=f"cluster {cluster}: {len(found)} worker(s)", title_justify="left", header_style="bold"
    )
    for name in ("worker", "host", "GPU", "SMs", "memory GB", "driver"):
        table.add_column(name, justify="right" if name in ("SMs", "memory GB") else "left")
    for address, host, info in found:
        table.add_row(
            address,
            host,
            info.name,
            str(info.sm_count),
            f"{info.total_memory_bytes / 1e9:.0f}",
            info.driver_version,
        )
    out.print(table)
    models = {info.name for _, _, info in found}
    if len(models) > 1:
        out.print(f"GPU models differ ({', '.join(sorted(models))}): a run needs one model")
