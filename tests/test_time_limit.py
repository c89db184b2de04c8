"""The suite's per-test time limit (tests/conftest.py, `time_limit` in pyproject.toml): a test
that hangs fails with TimeLimit after its limit, whatever it is blocked in (a sleep, a lock,
a child process, a CLI command under typer's runner, which catches every Exception), instead
of hanging the suite."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

HANGING = textwrap.dedent("""
    import subprocess
    import threading
    import time

    import pytest
    import typer
    from typer.testing import CliRunner


    def test_a_sleep():
        time.sleep(120)


    def test_a_lock():
        lock = threading.Lock()
        lock.acquire()
        lock.acquire()


    def test_a_child_process():
        subprocess.run(["sleep", "120"], check=False)


    def test_a_command_under_clirunner():
        app = typer.Typer()

        @app.command()
        def wait() -> None:
            threading.Event().wait()

        CliRunner().invoke(app, [])


    @pytest.mark.time_limit(1)
    def test_its_own_limit():
        time.sleep(120)


    def test_a_quick_one():
        assert True
""")


def test_a_hanging_test_fails_at_its_time_limit_and_the_rest_run(tmp_path):
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_hangs.py").write_text(HANGING)
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "time_limit=3",
            "-W",
            "ignore",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    assert "5 failed, 1 passed" in out, out[-3000:]
    assert out.count("TimeLimit: ") >= 5 and "ran past the time limit of 1 s" in out
    assert took < 120  # five limits of 3 s or less, not five hangs


def test_the_suite_has_a_time_limit():
    pyproject = (HERE.parent / "pyproject.toml").read_text()  # no tomllib on Python 3.10
    (limit,) = re.findall(r'^time_limit = "(\d+)"$', pyproject, re.MULTILINE)
    assert 0 < int(limit) <= 600
