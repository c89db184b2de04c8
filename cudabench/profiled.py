"""The process `cudabench profile` runs under Nsight Compute, its plan handed over as data:

    ncu ... python -m cudabench.profiled REQUEST.pickle

REQUEST is a pickled `ProfileRequest` (the planned jobs, the GPU, the rows' file) written by
cli/profile_cmd.py: no command line is rebuilt, so the child runs exactly the parent's plan.
The child opens a session in this process in profile mode (session.py, executors.InProcess):
nothing is timed, each NVTX range holds exactly one call of its variant. The rows go to the
request's results file (no history database: the parent records its own timed run). Exit
status: 0, 1 if a row failed, 2 if the session could not open (one line on stderr).
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path

from cudabench.core.errors import UsageError
from cudabench.core.records import TimingOptions
from cudabench.execution.plan import Plan
from cudabench.execution.session import InProcess, Session


@dataclass(frozen=True)
class ProfileRequest:
    """What the profiled child runs: the parent's plan (each job's warm-up the launches
    before the profiled one), on `device`, its rows written to `rows` (a .json path)."""

    work: Plan
    device: int
    rows: Path
    command: str


def write_request(request: ProfileRequest, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(request))


def for_profiling(work: Plan, warmup: int) -> Plan:
    """The plan as the child runs it: `warmup` launches before the profiled one, events (no
    CUPTI under ncu), the header defaults (the parent planned without the tuning file)."""

    def adjust(timing: TimingOptions) -> TimingOptions:
        return dataclasses.replace(timing, warmup=warmup, timer="events")

    jobs = [dataclasses.replace(job, timing=adjust(job.timing)) for job in work.jobs]
    return dataclasses.replace(work, jobs=jobs, timing=adjust(work.timing))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cudabench.profiled REQUEST.pickle", file=sys.stderr)
        return 2
    request: ProfileRequest = pickle.loads(Path(args[0]).read_bytes())
    work = request.work
    try:
        with Session.open(InProcess(request.device, profile=True)) as session:
            sweep = session.start(
                work.op_label, work.timing, request.command, output=request.rows, record=False
            )
            sweep.run(work.jobs)
            session.finish()
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if any(r.status.is_failure for r in sweep.rows if not r.is_baseline) else 0


if __name__ == "__main__":
    sys.exit(main())
