"""Cluster status: the workers of a Dask cluster and their GPUs, as cudabench's worker
process on each sees them. `cudabench cluster status` is this call."""

from __future__ import annotations

from dataclasses import dataclass

from cudabench.core.errors import UsageError
from cudabench.core.records import DeviceInfo
from cudabench.execution.pool import DEFAULT_TIMEOUT_S

__all__ = ["ClusterWorker", "cluster_workers"]


@dataclass(frozen=True)
class ClusterWorker:
    address: str
    host: str
    info: DeviceInfo


def cluster_workers(address: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[ClusterWorker]:
    """Each worker of the cluster at `address` (a scheduler address, or 'local'); UsageError
    (one line) when no scheduler answers or `distributed` is missing."""
    from cudabench.execution import cluster_connect as dask_cluster  # Dask, imported only when asked

    try:
        client = dask_cluster.connect(address, dask_cluster.fake_worker_count())
    except dask_cluster.ClusterError as exc:
        raise UsageError(str(exc)) from None
    try:
        found = dask_cluster.workers(client, timeout_s)
    finally:
        local = getattr(client, "cluster", None)
        client.close()
        if local is not None:
            local.close()
    return [ClusterWorker(a, host, info) for a, host, info in found]
