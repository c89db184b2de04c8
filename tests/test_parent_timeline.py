"""scripts/parent_timeline.py on the fake backend: the command runs as `cudabench` would, and
the timeline names every step the script wraps (so a renamed method breaks this test, not
the next measurement on a GPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "parent_timeline.py"


def test_the_timeline_of_a_run_names_each_step_and_the_parent_work(tmp_path):
    env = {**os.environ, "CUDABENCH_BACKEND": "fake", "CUDABENCH_DB": str(tmp_path / "db")}
    out = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "reduce", "--shape", "4096", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.is_file()  # the command itself ran
    events = [line.split(None, 2)[2] for line in done.stderr.splitlines() if line.startswith("@T ")]
    times = [float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("@T ")]
    assert times == sorted(times)
    steps = ("pool.open begin", "worker for GPU 0 ready", "sweep.run begin", "sweep.finish end")
    for step in (*steps, "pool.close end"):
        assert step in events, step
    assert any(e.startswith("first row heard: reduce ") for e in events)
    tallied = {m.group(1): int(m.group(2)) for e in events if (m := re.match(r"tally (\S+): (\d+) calls", e))}
    assert tallied["ResultsFiles.row"] == tallied["HistoryRecord.row"] > 0
    assert tallied["round._receive"] > tallied["ResultsFiles.row"]  # started, rows, done
    assert "pool.take_over" in tallied and "ResultsFiles.finish" in tallied
    assert re.search(r"command done: \d+ rows heard", done.stderr)
