"""Finding a Dask cluster for `--cluster` (cluster.py runs the jobs on it): the address
checked at once, a client connected (a scheduler, or a local cluster of one worker a GPU:
dask-cuda's, or plain processes on the fake backend), each worker's GPU described, and the
run's GPU model chosen among them. Every failure is a ClusterError of one line.
"""

from __future__ import annotations

import os
from typing import Any

from cudabench.core.records import DeviceInfo
from cudabench.execution.cluster_node import describe

CONNECT_TIMEOUT_S = 10
# How many workers a task may take down before the scheduler gives up on it (KilledWorker):
# distributed.scheduler.allowed-failures, set for the schedulers cudabench starts itself
# (`--cluster local`); a remote scheduler uses its own (Dask's default is 3). This, not a
# task's `retries` (which re-runs a task whose function raised), is what re-runs a lost
# worker's job.
ALLOWED_FAILURES = 2
# distributed.deploy.lost-worker-timeout for the clusters cudabench starts: a nanny is never
# closed for a worker that is slow to come back (see the module's docstring)
LOCAL_LOST_WORKER_TIMEOUT = "365d"


class ClusterError(RuntimeError):
    """No scheduler, no workers, mixed GPU models, or no `distributed`: one line."""


def _check_address(address: str) -> None:
    """ClusterError (one line) for an address Dask cannot read, at once: Dask's own client
    says so only after its connect timeout."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address, strict=False)
        if scheme in ("tcp", "tls", "ucx"):
            parse_host_port(location)
    except ValueError as exc:
        raise ClusterError(
            f"--cluster {address}: {exc} (a scheduler is host:port, e.g. tcp://10.0.0.5:8786, or 'local')"
        ) from None


def connect(address: str, fake_workers: int | None = None) -> Any:
    """A `distributed.Client` for a scheduler address, or `local`: a LocalCUDACluster (one
    worker per GPU, dask-cuda) or, with the fake backend, a LocalCluster of `fake_workers`
    processes. ClusterError (one line) when it cannot."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError("--cluster needs Dask distributed: pip install -e '.[cluster]'") from None
    try:
        import dask

        if address == "local":
            # read by the cluster whenever a worker is lost: set for the process, not a block
            dask.config.set({"distributed.deploy.lost-worker-timeout": LOCAL_LOST_WORKER_TIMEOUT})
            if fake_workers is not None:
                with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
                    cluster = LocalCluster(
                        n_workers=fake_workers,
                        threads_per_worker=1,
                        processes=True,
                        resources={"GPU": 1},
                        dashboard_address=None,
                    )
            else:
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    raise ClusterError(
                        "--cluster local on GPUs needs dask-cuda (one worker "
                        "per GPU): pip install -e '.[cluster]'"
                    ) from None
                with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
                    cluster = LocalCUDACluster(
                        threads_per_worker=1, resources={"GPU": 1}, dashboard_address=None
                    )
            return Client(cluster)
        _check_address(address)
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except ClusterError:
        raise
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(
            f"--cluster {address}: no scheduler answered in "
            f"{CONNECT_TIMEOUT_S} s ({type(exc).__name__}: {exc})"
        ) from None


def workers(client: Any, timeout_s: float) -> list[tuple[str, str, DeviceInfo]]:
    """(Dask worker address, host, GPU) of each worker, each one's cudabench pool started."""
    found = client.run(describe, timeout_s)
    return sorted((address, host, info) for address, (info, _, host) in found.items())


def survey(
    client: Any,
    timeout_s: float,
    gpu_model: str | None = None,
    preload: tuple[str, ...] = (),
) -> tuple[DeviceInfo, dict[str, str], list[str]]:
    """The GPU model the run uses, its versions, and the addresses of the workers that have
    it (each one's pool opened, its successor importing `preload`: cluster_node.py).
    ClusterError if there are no workers, if their GPUs differ and `gpu_model` (a part of
    the model's name, any case) does not pick one, or if it matches none."""
    found = client.run(describe, timeout_s, preload)
    if not found:
        raise ClusterError("the cluster has no workers")
    models = sorted({info.name for info, _, _ in found.values()})
    if gpu_model is not None:
        chosen = [m for m in models if gpu_model.lower() in m.lower()]
        if len(chosen) != 1:
            raise ClusterError(
                f"--gpu-model {gpu_model!r} matches {len(chosen)} of the "
                f"cluster's GPU models ({', '.join(models)})"
            )
    elif len(models) > 1:
        raise ClusterError(
            f"the cluster's GPUs differ ({', '.join(models)}): one run needs one "
            "GPU model; pick one with --gpu-model"
        )
    else:
        chosen = models
    addresses = sorted(a for a, (info, _, _) in found.items() if info.name == chosen[0])
    info, versions, _ = found[addresses[0]]
    return info, versions, addresses


def fake_worker_count() -> int | None:
    """With the fake backend: how many local workers (CUDABENCH_FAKE_DEVICES, default 2)."""
    if os.environ.get("CUDABENCH_BACKEND") != "fake":
        return None
    return int(os.environ.get("CUDABENCH_FAKE_DEVICES", "2") or 2)
