"""scripts/worker_start.py on the fake backend: a plain worker for every GPU at once, each
one's ready timed, with every GPU visible to each and with each shown its own."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "worker_start.py"


def test_the_script_times_each_workers_ready_in_both_ways(tmp_path):
    env = {**os.environ, "CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_DEVICES": "2"}
    out = tmp_path / "start.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--devices", "0,1", "--rounds", "1", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(out.read_text())
    assert [r["mode"] for r in found["rounds"]] == ["visible", "alone"]
    for run in found["rounds"]:
        assert set(run["ready_s"]) == {"0", "1"} and all(0 < s < 120 for s in run["ready_s"].values())
    assert not found["can_alone"] and "`alone` is `visible`" in done.stdout  # the fake's GPUs


def test_visible_shows_every_gpu_and_alone_each_its_own(monkeypatch):
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_DEVICES", "1")
    spec = importlib.util.spec_from_file_location("worker_start", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(script.worker_process, "alone", lambda device: f"GPU-{device}")
    assert script.start_all([0, 1], alone=True, torch=False)["shown"] == ["GPU-0", "GPU-1"]
    assert script.start_all([0, 1], alone=False, torch=False)["shown"] == [None, None]
    assert script.worker_process.alone(3) == "GPU-3"  # the switch is put back
