"""Which queued job an idle worker of the pool takes: one decision, asked by pool.py each time
a worker is idle (no processes here).

A job may need Python libraries (CaseJob.libraries: torch for a torch baseline, triton and
torch for a Triton variant) that one worker imported as it started; another worker would first
spend seconds importing them (torch: about 4.5 s on an H200 machine). So an idle worker takes

1. the first queued job that needs a library it has (the others would have to import it),
   else the first that needs none;
2. else (every queued job needs a library it lacks) nothing, where its own GPU's successor
   (pool.py) is bringing the first job's libraries: that one takes it;
3. else the first job, unless a worker that has its libraries is idle (that one takes it),
   or is busy but will be free sooner than this one could import them. How soon comes from
   the jobs' estimates (parts.split: the seconds their rows took last time on this GPU
   model): the holders' work left on their current jobs and on the queued jobs they can
   run, shared among them, against the import's time.
   A queued job without an estimate counts as none; a holder on a job without one is taken
   to be long, so the job is taken (as before estimates); a holder still importing (a GPU
   whose successor is not ready) is free once its import is done.

On four H200s, the seeds sweep, before this choice: the torch worker took the first queued
job whatever it needed, and the others imported torch whenever only torch jobs were left;
three GPUs each spent about 3 s importing torch near the end, for rows of under a second.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass


@dataclass(frozen=True)
class Queued:
    """A queued job as the choice sees it: its index, the libraries it needs, its estimate."""

    index: int
    needs: frozenset[str]
    estimate_s: float | None = None


@dataclass(frozen=True)
class Other:
    """Another worker: the libraries it has, whether it is idle, and its current job's work
    left (its estimate less the time it has run; None where unknown)."""

    libraries: frozenset[str]
    idle: bool
    left_s: float | None = None


def choose(
    queue: Sequence[Queued],
    has: Set[str],
    others: Sequence[Other],
    import_s: float,
    coming: Set[str] = frozenset(),
) -> Queued | None:
    """The job a worker that has the libraries `has` takes from `queue` (not empty), or None:
    it waits, since its GPU's successor brings `coming`, the first job's libraries, or a worker
    with them is idle or will be free within `import_s`."""
    mine = next((job for job in queue if job.needs and job.needs <= has), None)  # only it runs
    mine = mine or next((job for job in queue if job.needs <= has), None)  # them cheaply
    if mine is not None:
        return mine
    first = queue[0]
    if first.needs <= has | coming:
        return None
    holders = [w for w in others if first.needs <= w.libraries]
    if not holders:
        return first
    if any(w.idle for w in holders):
        return None
    lefts = [w.left_s for w in holders]
    if any(left is None for left in lefts):  # a holder on a job of unknown length
        return first
    theirs = [j.estimate_s or 0.0 for j in queue if any(j.needs <= w.libraries for w in holders)]
    wait_s = (sum(left or 0.0 for left in lefts) + sum(theirs)) / len(holders)
    return first if wait_s > import_s else None
