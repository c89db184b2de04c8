"""Every GPU-free command the docs print runs as printed (issue 46: docs/guide/ops.md's
`CUDABENCH_BACKEND=fake cudabench run rmsnorm --ops myops -s 64x1000` calibrated the fake's
ceilings first and sat there for minutes).

A command is a line of a fenced block in README.md or docs/**/*.md that starts with
`CUDABENCH_BACKEND=fake cudabench ` (a trailing `# comment` dropped). It runs in a fresh folder
holding what its page makes first: the files the page's fenced blocks name on their first line
(`# rmsnorm/op.py`, `// rmsnorm/naive.cu`), under the folder the page's commands give `--ops`,
and the page's `cudabench new ...` commands, run as printed. It runs as a user's shell would
run it, with the user's defaults (no $CUDABENCH_CEILINGS, $CUDABENCH_DB or $CUDABENCH_TUNING:
the ceilings file and the database are the folder's results/), and must end within the time
limit with 0, or with 1 when the page says the run holds a planted failure (its rows saved
and complete, none a TIMEOUT)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PREFIX = "CUDABENCH_BACKEND=fake cudabench "
FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.DOTALL)
NAMED = re.compile(r"(?:#|//) ([\w./-]+\.(?:py|cu|cuh))$")


def fenced(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


def lines(page: Path) -> list[str]:
    """The commands of a page's fenced blocks, their trailing comments dropped."""
    found = []
    for block in fenced(page):
        for line in block.splitlines():
            command = re.split(r"\s#", line, maxsplit=1)[0].strip()
            if command:
                found.append(command)
    return found


def fake_commands() -> list[tuple[Path, str]]:
    return [(page, c) for page in PAGES for c in lines(page) if c.startswith(PREFIX)]


def prepare(page: Path, folder: Path) -> None:
    """What the page makes before its commands: the files its blocks name, under the page's
    --ops folder; then its `cudabench new` commands."""
    commands = lines(page)
    ops = {w[i + 1] for c in commands for w in [shlex.split(c)] for i, x in enumerate(w[:-1]) if x == "--ops"}
    for name in ops:  # a folder of the checkout (the README's tests/corpus): copied as it is
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / name, dirs_exist_ok=True)
    under = folder / (sorted(ops)[0] if ops else ".")
    for block in fenced(page):
        first = block.splitlines()[0].strip() if block.strip() else ""
        named = NAMED.fullmatch(first)
        if named:
            path = under / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block)
    for command in commands:
        if command.startswith("cudabench new "):
            done = cli(shlex.split(command)[1:], folder, {})
            assert done.returncode == 0, f"{page.name}: {command!r}: {done.stderr[-1500:]}"


def planted(folder: Path) -> set[str]:
    """The variants whose header names one of the fake backend's planted faults, and the
    Python variants planted wrong on purpose (tests/corpus names them `bug_*`)."""
    found = set()
    for path in folder.rglob("*.py"):
        found.update(re.findall(r'@variant\(\s*name="(bug_\w+)"', path.read_text()))
    for path in folder.rglob("*.cu"):
        text = path.read_text()
        name = re.search(r"^//\s+variant:\s*(\w+)", text, re.MULTILINE)
        if name and re.search(r"^//\s+entry:\s*fake_", text, re.MULTILINE):
            found.add(name.group(1))
    return found


def cli(args: list[str], cwd: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`cudabench ARGS` as a user's shell runs it (the checkout under test on the path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDABENCH_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "cudabench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_docs_print_gpu_free_commands():
    assert [c for _, c in fake_commands()], "no `CUDABENCH_BACKEND=fake cudabench ...` line in the docs"


@pytest.mark.parametrize(
    "page, command", fake_commands(), ids=[f"{p.name}:{c[len(PREFIX) :]}" for p, c in fake_commands()]
)
def test_a_gpu_free_command_in_the_docs_runs_as_printed(page, command, tmp_path):
    prepare(page, tmp_path)
    words = shlex.split(command)
    started = time.monotonic()
    done = cli(words[2:], tmp_path, {"CUDABENCH_BACKEND": "fake"})
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    assert done.returncode in (0, 1), f"{command!r} exited {done.returncode}:\n{out[-3000:]}"
    assert "Traceback" not in out and "measuring this GPU's ceilings" not in out
    if words[2] == "run":
        (saved,) = (tmp_path / "results").glob(f"*_{words[3]}.json")
        doc = json.loads(saved.read_text())
        assert doc["meta"]["complete"] and doc["rows"]
        assert not [r for r in doc["rows"] if r["status"] == "TIMEOUT"]
        failing = {r["variant"] for r in doc["rows"] if r["status"] not in ("OK", "N/A", "SKIPPED")}
        # exit 1 only for the failures the page plants (rmsnorm's `wrong`: entry fake_wrong)
        assert failing <= planted(tmp_path), out[-2000:]
        assert done.returncode == (1 if failing else 0), out[-2000:]
    assert took < 150, f"{command!r} took {took:.0f} s"
