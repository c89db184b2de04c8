"""The process `cudabench profile` runs under Nsight Compute, its plan handed over as data:

    ncu ... python -m cudabench.profiled REQUEST.pickle

REQUEST is a pickled `ProfileRequest` (the planned jobs, the GPU, the rows' file) written by
the profile use case (usecases/profile_ncu.py): no command line is rebuilt, so the child runs
exactly the parent's plan. This face reads it and calls `profiled_child`, which opens a
session in this process in profile mode: nothing is timed, each NVTX range holds exactly one
call of its variant, the rows go to the request's results file. Exit status: 0, 1 if a row
failed, 2 if the session could not open (one line on stderr).
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from cudabench.core.errors import UsageError
from cudabench.usecases.profile_ncu import ProfileRequest, for_profiling, profiled_child, write_request

__all__ = ["ProfileRequest", "for_profiling", "main", "write_request"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cudabench.profiled REQUEST.pickle", file=sys.stderr)
        return 2
    request: ProfileRequest = pickle.loads(Path(args[0]).read_bytes())
    try:
        rows = profiled_child(request)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if any(r.status.is_failure for r in rows if not r.is_baseline) else 0


if __name__ == "__main__":
    sys.exit(main())
