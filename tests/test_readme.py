"""The README is a door: it stays small, its links into docs/ resolve, its install, test and
docs commands are what CI runs, and its GPU-free commands work as written.

How a README command is found: every line of a ```bash block (comments after ` #` dropped,
blank and comment-only lines skipped), and every `$ ` line of a ```console block.

How each command is treated (the rule; a command that matches none of it fails the test, so
a new command in the README must be sorted here first):

- **CI's own lines** (`pip install ...`, `python3 -m pytest ...`, `mkdocs ...`): not run here
  (CI runs them); each must be a line of `.ci/run`, exactly as written, so CI installs and
  tests exactly as the README says.
- **Needs an NVIDIA driver** (`nvidia-smi`, `cat /proc/driver/nvidia/...`, a `python3 -c`
  that imports pynvml): not run.
- **Needs a GPU** (GPU_COMMANDS below): `cudabench run|profile|ceilings|tune|verify` unless the
  command asks only for `--help`/`-h` or `--space`; `cudabench compare|report|history|import`
  read the results of such runs. Not run.
- **On the fake backend** (`CUDABENCH_BACKEND=fake cudabench ...`): GPU-free, and run as
  written by tests/test_docs_commands.py, which runs every such line of the README and docs/.
- **Every other `cudabench ...` command** is GPU-free: it runs as written (`cudabench` as
  `python -m cudabench`, which the README calls the same CLI, from the repository root so the
  checkout under test is what runs) and must exit 0. `cudabench check` compiles the whole
  catalogue with nvcc (240 compiles: 240 s with an empty cache on a shared 2-core machine,
  under 3 s with a warm `~/.cache/cudabench`), so it runs in its own test, marked `nvcc` and
  `slow`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI_RUN = ROOT / ".ci" / "run"
README_LIMIT = 10 * 1024 + 512  # bytes: the README is a door, the manual is docs/

GPU_COMMANDS = ("run", "profile", "ceilings", "tune", "verify", "compare", "report", "history", "import")
GPU_FREE_FLAGS = ("--help", "-h", "--space")
CI_PREFIXES = (
    "pip install ",
    "python3 -m pytest",
    "mkdocs ",
    "ruff check",
    "ruff format",
    "mypy",
    "lint-imports",
)
DRIVER_PREFIXES = ("nvidia-smi", "cat /proc/driver/nvidia/")
SLOW = {"cudabench check"}  # GPU-free but long: its own test below

_FENCE = re.compile(r"^```(\w*)\s*$")


def commands(text: str) -> list[str]:
    """The shell commands of the README's ```bash and ```console blocks, in order."""
    found: list[str] = []
    language: str | None = None
    for line in text.splitlines():
        fence = _FENCE.match(line.strip())
        if fence:
            language = None if language is not None else fence.group(1)
            continue
        if language == "bash":
            command = re.split(r"\s#", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                found.append(command)
        elif language == "console" and line.startswith("$ "):
            found.append(line[2:].strip())
    return found


def kind(command: str) -> str:
    """'ci', 'driver', 'fake', 'gpu', 'slow' or 'run' (see the module's docstring), or 'unknown'."""
    if command.startswith(CI_PREFIXES):
        return "ci"
    if command.startswith("CUDABENCH_BACKEND=fake cudabench "):
        return "fake"
    if command.startswith(DRIVER_PREFIXES) or (command.startswith("python3 -c") and "pynvml" in command):
        return "driver"
    words = shlex.split(command)
    if words[0] != "cudabench":
        return "unknown"
    if command in SLOW:
        return "slow"
    if len(words) > 1 and words[1] in GPU_COMMANDS and not set(words) & set(GPU_FREE_FLAGS):
        return "gpu"
    return "run"


def run_as_written(
    command: str, cache: Path | None = None, cwd: Path = ROOT, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    path = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    if cache is not None:
        env["CUDABENCH_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "cudabench", *words[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


TEXT = README.read_text(encoding="utf-8")
COMMANDS = commands(TEXT)


def test_the_readme_is_a_door_not_a_manual():
    size = len(TEXT.encode("utf-8"))
    assert size <= README_LIMIT, f"README.md: {size} bytes > {README_LIMIT}; move detail to docs/"


def test_every_readme_command_is_sorted():
    unknown = [c for c in COMMANDS if kind(c) == "unknown"]
    assert not unknown, f"commands the rule in tests/test_readme.py does not know: {unknown}"
    assert any(kind(c) == "run" for c in COMMANDS), "no GPU-free command left to check"


def test_install_test_and_docs_commands_are_what_ci_runs():
    ci_lines = {line.strip() for line in CI_RUN.read_text().splitlines()}
    ci_commands = [c for c in COMMANDS if kind(c) == "ci"]
    needed = [
        'pip install -e ".[cuda13,test]"',
        "python3 -m pytest -q",
        "mkdocs build --strict",
        "ruff check cudabench tests scripts",
        "ruff format --check cudabench tests scripts",
        "mypy",
        "lint-imports",
    ]
    for command in needed:
        assert command in ci_commands, f"the README no longer says {command!r}"
    missing = [c for c in ci_commands if c not in ci_lines]
    assert not missing, f"README commands that .ci/run does not run as written: {missing}"


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the README's commands run, in the README's order, as a user's own folder would
    be (`cudabench new op ... --in myops` writes there, not into the checkout); the
    checkout's folders a command names (`--ops tests/corpus`) are copied there."""
    folder = tmp_path_factory.mktemp("user")
    for command in COMMANDS:
        words = shlex.split(command)
        for name in (w for prev, w in zip(words, words[1:]) if prev == "--ops"):
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, folder / name, dirs_exist_ok=True)
    return folder


@pytest.mark.parametrize("command", [c for c in COMMANDS if kind(c) == "run"])
def test_gpu_free_readme_command_runs(command, user_folder):
    done = run_as_written(command, cwd=user_folder)
    assert done.returncode == 0, f"{command!r} exited {done.returncode}:\n{done.stderr[-2000:]}"


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.time_limit(1500)
@pytest.mark.parametrize("command", [c for c in COMMANDS if kind(c) == "slow"])
def test_readme_check_command_compiles_the_catalogue(command, catalogue_cache):
    # the cache tests/test_compile.py filled when it ran first: the README's command is run
    # as written, its compiles not paid twice; alone (an empty cache) it compiles all 240,
    # which took up to 590 s on a loaded 2-core machine: its own limits allow for that
    done = run_as_written(command, catalogue_cache, timeout=1200)
    assert done.returncode == 0, f"{command!r} exited {done.returncode}:\n{done.stderr[-2000:]}"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as mkdocs makes it (Python-Markdown's toc slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE)
    return {slug(h) for h in headings}


def test_every_docs_link_in_the_readme_points_to_a_file_and_heading():
    links = [target for target in _LINK.findall(TEXT) if target.startswith("docs/")]
    assert links, "the README links into no docs page"
    broken = []
    for target in links:
        path, _, anchor = target.partition("#")
        page = ROOT / path
        if not page.is_file() or (anchor and anchor not in anchors(page)):
            broken.append(target)
    assert not broken, f"README links to docs pages or headings that do not exist: {broken}"


def test_the_rule_sorts_commands_as_documented():
    assert kind("cudabench run reduce --shape 442368x128") == "gpu"
    assert kind("cudabench tune reduce -v float4 -s 2^24") == "gpu"
    assert kind("cudabench tune reduce -v float4 -s 2^24 --space") == "run"
    assert kind("cudabench run --help") == "run"
    assert kind("cudabench compare old.json new.json --fail-on-regression") == "gpu"
    assert kind("cudabench list") == "run"
    assert kind("cudabench check") == "slow"
    assert kind("nvidia-smi") == "driver"
    assert kind('pip install -e ".[cuda13,test]"') == "ci"
    assert kind("rm -rf results") == "unknown"
    block = (
        "```bash\ncudabench list   # the ops\n# a comment\n\n```\n"
        "```console\n$ cudabench --help\nout\n```\n```text\n$ cudabench run x\n```\n"
    )
    assert commands(block) == ["cudabench list", "cudabench --help"]
    assert slug("Two clocks: events and CUPTI") == "two-clocks-events-and-cupti"
