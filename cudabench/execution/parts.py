"""A sweep's jobs cut finer for several GPUs, the longest first, and put back together.

A job is a whole case: every variant of one op, shape and dtype, and its library baselines.
On one GPU the jobs run as they are, in their order. On several, a whole case is the unit a
GPU takes, so one long case (reduce's naive variant at 2^30 elements, two seconds a call)
is the sweep's critical path while the other GPUs wait. So here each case whose variants are
not sampled in turn (`--interleave`) and that is not a `verify` check is cut into parts:
each variant alone, and its library baselines together (the `vs` column divides by them).
Parts go out longest first: by the seconds their rows took last time on this GPU model where
the history database has them (`estimate`), else by the bytes their case moves (at the
seconds a byte of the parts the history knows, where it knows some). The sweep (sweep.py) gives a
case's rows their derived columns once all its parts are in, in the job's own row order,
so the rows, the files and the tables are those of the uncut job. An interleaved case stays
whole: its variants' samples are taken in turn on one GPU. A Dask cluster's workers take the
same parts as one host's GPUs (a task each: execution/cluster.py).

On one GPU whose jobs need a library that arrives later (`later`: torch, imported by the
pool's successor beside the plain worker, pool.py), each such job is cut in two, in place:
the rows that need none of it (the CUDA variants) and those that do (the baselines, Python
variants that name it), so that the plain worker has the kernels to run meanwhile (on four
H200s the seeds sweep's one-GPU run left its GPU idle 4.4 s waiting for torch: nearly every
case has a torch baseline).

`balance_note` says how even the GPUs' work was: each one's busy seconds (its rows' set-up
and timing) and the longest row.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from cudabench.core.records import ResultRow
from cudabench.measure.runner import CaseJob, libraries_of


@dataclass(frozen=True)
class Parts:
    """What the executor runs (`jobs`), the index of the job each part is of (`owner`), and
    how many parts each job has (`count`)."""

    jobs: list[CaseJob]
    owner: list[int]
    count: list[int]


def _cut(job: CaseJob) -> list[CaseJob]:
    """The parts of one job: each variant alone and the baselines together, or the job whole."""
    if job.timing.interleave or job.check_only or len(job.variants) + bool(job.baselines) <= 1:
        return [job]
    parts = [CaseJob(job.case, (variant,), (), job.timing, job.op_file) for variant in job.variants]
    if job.baselines:
        parts.append(CaseJob(job.case, (), job.baselines, job.timing, job.op_file))
    return parts


def _apart(job: CaseJob, later: frozenset[str]) -> list[CaseJob]:
    """The job as [rows needing none of `later`, rows needing some], or whole where it is
    interleaved, a check, or one side is empty."""
    if job.timing.interleave or job.check_only:
        return [job]
    if not libraries_of(job) & later:  # (none where its op does not load: its rows say so)
        return [job]
    free = tuple(v for v in job.variants if not set(v.needs) & later)
    if not free:
        return [job]
    rest = tuple(v for v in job.variants if v not in free)
    return [
        dataclasses.replace(job, variants=free, baselines=()),
        dataclasses.replace(job, variants=rest),
    ]


def _size(job: CaseJob) -> int:
    """The bytes the job's case moves on the device (0 where the op cannot say)."""
    try:
        return int(job.op().device_bytes(job.case.shape))
    except Exception:  # an op that does not load: its rows will say so; no estimate
        return 0


def split(
    jobs: list[CaseJob],
    workers: int,
    estimate: Callable[[CaseJob], float | None] | None = None,
    later: frozenset[str] = frozenset(),
) -> Parts:
    """The jobs as parts for `workers` GPUs (one: the jobs themselves, in order, or cut
    apart from the libraries that come `later`), the longest first (a stable sort: equal
    parts keep their order). `estimate`: a part's seconds from an earlier run (None where it
    has none)."""
    if workers <= 1:
        pieces = [(index, part) for index, job in enumerate(jobs) for part in _apart(job, later)]
        count = [0] * len(jobs)
        for index, _ in pieces:
            count[index] += 1
        return Parts([part for _, part in pieces], [index for index, _ in pieces], count)
    cut = [(index, part) for index, job in enumerate(jobs) for part in _cut(job)]
    sizes = {index: _size(job) for index, job in enumerate(jobs)}
    bytes_ = [sizes[index] for index, _ in cut]
    guess = _guess([part for _, part in cut], bytes_, estimate)
    key = guess if any(g is not None for g in guess) else bytes_  # no past at all: by bytes
    order = sorted(range(len(cut)), key=lambda i: -(key[i] or 0.0))
    cut = [(cut[i][0], dataclasses.replace(cut[i][1], estimate_s=guess[i])) for i in order]
    count = [0] * len(jobs)
    for index, _ in cut:
        count[index] += 1
    return Parts([part for _, part in cut], [index for index, _ in cut], count)


def _guess(
    parts: list[CaseJob], sizes: list[int], estimate: Callable[[CaseJob], float | None] | None
) -> list[float | None]:
    """Each part's seconds: `estimate`'s; for a part it has none for, its case's bytes at the
    median seconds a byte of the parts it has (None where it has none with bytes)."""
    seconds = [estimate(part) if estimate is not None else None for part in parts]
    rates = [s / b for s, b in zip(seconds, sizes) if s is not None and b > 0]
    if not rates:
        return seconds
    per_byte = statistics.median(rates)
    return [s if s is not None else b * per_byte for s, b in zip(seconds, sizes)]


def in_job_order(rows: list[ResultRow], job: CaseJob) -> list[ResultRow]:
    """A job's rows in its own order (its variants, then its baselines), however its parts
    arrived."""
    names = [v.label for v in job.variants] + list(job.baselines)
    rank = {name: i for i, name in enumerate(names)}
    return sorted(rows, key=lambda r: rank.get(r.label, len(names)))


Spans = dict[tuple[str, int], tuple[float, float]]  # (host, GPU) -> its rows' first start, last end


def balance_note(rows: list[ResultRow], spans: Spans | None = None) -> str:
    """How the rows' work spread over the GPUs that ran them, or '' for one GPU: each GPU's
    busy seconds (its rows' set-up and timing), of the seconds from its first row's start to
    its last row's end where `spans` has them (the rest of that time its worker waited: for
    a job, the parent, a successor taking over), and the longest row."""
    busy: dict[str, float] = defaultdict(float)
    span: dict[str, float] = {}
    hosts = len({r.host for r in rows})
    for row in rows:
        if row.device is None:
            continue
        where = f"{row.host} GPU {row.device}" if hosts > 1 else f"GPU {row.device}"
        busy[where] += (row.setup_s or 0) + (row.measure_s or 0)
        first_last = (spans or {}).get((row.host or "", row.device))
        if first_last is not None:
            span[where] = first_last[1] - first_last[0]
    if len(busy) < 2:
        return ""
    longest = max(rows, key=lambda r: (r.setup_s or 0) + (r.measure_s or 0))
    spent = (longest.setup_s or 0) + (longest.measure_s or 0)
    each = ", ".join(
        f"{where} {seconds:.1f}" + (f" of {span[where]:.1f} s" if where in span else " s")
        for where, seconds in sorted(busy.items())
    )
    within = ", of the time from its first row's start to its last row's end" if span else ""
    return (
        f"work per GPU (its rows' set-up and timing{within}): {each}; the longest row: {longest.op} "
        f"{longest.label} {longest.shape} {longest.dtype}, {spent:.1f} s"
    )
