"""Issue 47, "a new user's clean clone, part two": each test names its item. GPU-free (the
fake backend, nvcc, or files written here)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import interrupt

ROOT = Path(__file__).resolve().parent.parent
QUICK = ["--no-ceilings", "--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]

# A cudabench process whose clock stands still at one second: every run it starts is
# "started in the same second" as every other one's.
_SAME_SECOND = """
import datetime as real, sys, types
import cudabench.record.stems as stems

class Fixed(real.datetime):
    @classmethod
    def now(cls, tz=None):
        return real.datetime(2026, 11, 21, 22, 19, 24, tzinfo=real.timezone.utc)

stems.dt = types.SimpleNamespace(datetime=Fixed, timezone=real.timezone)
from cudabench.cli import main
main(sys.argv[1:])
"""


def _cudabench(cwd: Path, *args: str, same_second: bool = True) -> subprocess.Popen[str]:
    env = {**os.environ, "CUDABENCH_BACKEND": "fake", "PYTHONPATH": str(ROOT)}
    prefix = ["-c", _SAME_SECOND] if same_second else ["-m", "cudabench"]
    return subprocess.Popen(
        [sys.executable, *prefix, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str, str]:
    try:
        out, errors = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, errors


# ---------------------------------------------------------------- 1: concurrent runs


def test_1_two_runs_started_in_the_same_second_keep_both_results(tmp_path):
    """Two processes, one second: each run's rows in files of its own (`_2` for the later
    claim), both complete; nothing overwritten."""
    shapes = {"a": ["-s", "1000", "-s", "3000"], "b": ["-s", "2000"]}
    procs = {
        name: _cudabench(tmp_path, "run", "reduce", *s, "-v", "float4", "-v", "naive", *QUICK)
        for name, s in shapes.items()
    }
    for name, proc in procs.items():
        code, _, errors = _finish(proc)
        assert code == 0, f"{name}: {errors}"
    files = sorted((tmp_path / "results").glob("*_reduce*.json"))
    assert [f.name for f in files] == ["20261121T221924_reduce.json", "20261121T221924_reduce_2.json"]
    seen = []
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["meta"]["complete"] is True
        seen.append(sorted({r["shape"] for r in doc["rows"]}))
    assert sorted(seen) == [["1000", "3000"], ["2000"]]
    assert not list((tmp_path / "results").glob(".*.lock"))  # the claims were given back


SHAPES = 150


def test_1_a_run_writing_an_output_file_refuses_a_second_run_naming_it(tmp_path):
    """`-o run.json` held by a live run: a second run's -o run.json (even with --force)
    is one line naming the first (its pid), exit 2; the first run's rows are intact."""
    target = tmp_path / "run.json"
    # long enough to outlast a second process's start (rows are cheap to save: rowcache.py)
    many = [a for n in range(1, SHAPES + 1) for a in ("-s", str(1000 + n))]
    first = _cudabench(tmp_path, "run", "reduce", *many, *QUICK, "-o", str(target), same_second=False)
    try:
        deadline = time.monotonic() + 120
        while not target.exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)  # the first row saved: the run is under way
        assert target.exists(), first.stderr.read() if first.poll() is not None else "no rows in 120 s"
        second = _cudabench(tmp_path, "run", "reduce", "-s", "64", *QUICK, "-o", str(target), "--force")
        code, _, errors = _finish(second)
        assert first.poll() is None, "the first run ended before the second claimed: make it longer"
    finally:
        first_code, _, first_errors = _finish(first)
    assert code == 2, errors
    lines = [ln for ln in errors.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in errors, errors
    assert "another cudabench run" in lines[0] and f"pid {first.pid}" in lines[0], lines[0]
    assert first_code == 0, first_errors
    doc = json.loads(target.read_text())
    assert doc["meta"]["complete"]
    assert {r["shape"] for r in doc["rows"]} == {str(1000 + n) for n in range(1, SHAPES + 1)}


def test_1_claims_in_one_process(tmp_path):
    from test_new_user import META

    from cudabench.core.errors import ResultsError
    from cudabench.record.results import write_results
    from cudabench.record.stems import claim_stem, release_stem

    started = "2026-11-21T22:19:24+00:00"
    first = claim_stem(tmp_path, "reduce", started)
    second = claim_stem(tmp_path, "reduce", started)
    assert (first.name, second.name) == ("20261121T221924_reduce", "20261121T221924_reduce_2")
    write_results(first, META, [])
    release_stem(first)
    release_stem(second)
    third = claim_stem(tmp_path, "reduce", started)  # a finished run's name stays its own
    assert third.name == "20261121T221924_reduce_2"
    release_stem(third)
    with pytest.raises(ResultsError, match="existing results file"):
        claim_stem(tmp_path / f"{first.name}.json", "reduce", started)
    assert claim_stem(tmp_path / f"{first.name}.json", "reduce", started, force=True) == first
    release_stem(first)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{first.name}.csv", f"{first.name}.json"]


# ---------------------------------------------------------------- 2: a warm check


# nvcc itself, each call logged; with CUDABENCH_TEST_SLOW_PTX, `nvcc -ptx` is a compile that
# never ends (a child that sleeps, as cicc would run) and a compile keeps no PTX
_LOGGING_NVCC = """#!{python}
import os, subprocess, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
if os.environ.get("CUDABENCH_TEST_SLOW_PTX"):
    if "-ptx" in args:
        child = subprocess.Popen(["sleep", "120"])
        with open({pids!r}, "a") as pids:
            pids.write(f"{{os.getpid()}} {{child.pid}}\\n")
        child.wait()
        sys.exit(1)
    args = [a for a in args if a != "-keep" and not a.startswith("-keep-dir")]
os.execv({nvcc!r}, [{nvcc!r}, *args])
"""


def _logging_nvcc(tmp_path: Path) -> tuple[Path, Path, Path]:
    import shutil

    log, pids, nvcc = tmp_path / "nvcc.log", tmp_path / "pids", tmp_path / "nvcc"
    nvcc.write_text(
        _LOGGING_NVCC.format(python=sys.executable, log=str(log), pids=str(pids), nvcc=shutil.which("nvcc"))
    )
    nvcc.chmod(0o755)
    return nvcc, log, pids


def _calls(log: Path, flag: str) -> int:
    return sum(flag in line.split() for line in log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.nvcc
def test_2_a_warm_check_runs_no_nvcc(tmp_path):
    """The parameter pass learns from the compile (its PTX) and keeps what it learnt beside the
    cubin: once the cache is warm, `check` starts no compile and no `nvcc -ptx`. A cubin
    cached without them (an older cudabench) gets one `nvcc -ptx` each, once."""
    from typer.testing import CliRunner

    from cudabench.cli import app

    nvcc, log, _ = _logging_nvcc(tmp_path)
    runner = CliRunner()
    env = {"CUDABENCH_NVCC": str(nvcc), "CUDABENCH_CACHE": str(tmp_path / "cache")}
    made = runner.invoke(app, ["new", "op", "rms_lite", "--in", str(tmp_path / "mine")])
    assert made.exit_code == 0, made.output
    check = ["check", "rms_lite", "--ops", str(tmp_path / "mine"), "--arch", "sm_80"]
    cold = runner.invoke(app, check, env=env)
    assert cold.exit_code == 0, cold.output
    assert (_calls(log, "-cubin"), _calls(log, "-ptx")) == (3, 0)  # float32, float16, bfloat16
    log.unlink()
    warm = runner.invoke(app, check, env=env)
    assert warm.exit_code == 0, warm.output
    assert (_calls(log, "-cubin"), _calls(log, "-ptx")) == (0, 0)
    for kept in (tmp_path / "cache").glob("*.params.json"):
        kept.unlink()  # as an older cudabench left the cache
    old = runner.invoke(app, check, env=env)
    assert old.exit_code == 0, old.output
    assert (_calls(log, "-cubin"), _calls(log, "-ptx")) == (0, 1)  # the first dtype's
    log.unlink()
    assert runner.invoke(app, check, env=env).exit_code == 0
    assert not log.exists() or (_calls(log, "-cubin"), _calls(log, "-ptx")) == (0, 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, OSError):
        return False


@pytest.mark.nvcc
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal-ctrl-c", "sigint-to-main"])
def test_2_ctrl_c_in_the_parameter_pass_stops_check_at_once(tmp_path, terminal):
    """Ctrl-C while `check` reads the kernels' parameters (an `nvcc -ptx` under way, with a
    child): exit 130 within a few seconds, one line, the nvcc and its child gone."""

    nvcc, _, pids = _logging_nvcc(tmp_path)
    made = subprocess.run(
        [sys.executable, "-m", "cudabench", "new", "op", "rms_lite", "--in", str(tmp_path / "mine")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CUDABENCH_NVCC": str(nvcc),
        "CUDABENCH_CACHE": str(tmp_path / "cache"),
        "CUDABENCH_TEST_SLOW_PTX": "1",
    }
    command = [sys.executable, "-m", "cudabench", "check", "rms_lite", "--ops", str(tmp_path / "mine")]
    code, errors, took = interrupt([*command, "--arch", "sm_80", "-j", "2"], env, None, pids.exists, terminal)
    assert code == 130, errors
    assert took < 3, took
    assert "Traceback" not in errors and errors.strip().splitlines()[-1] == "interrupted"
    time.sleep(0.3)
    started = [int(p) for line in pids.read_text().splitlines() for p in line.split()]
    assert started and not any(_alive(pid) for pid in started)  # every nvcc and child, before or after


# ---------------------------------------------------------------- 3: --kernels paths

_KERNEL = """\
// cudabench:
//   variant: mine
//   entry: reduce_sum_mine
//   block: 256
//   grid: segments{op}
//   about: my reduction
extern "C" __global__ void reduce_sum_mine(const float* x, float* out, long long n, long long rows) {{}}
"""


def _one_line(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", ["check", "list", "run"])
def test_3_a_misspelt_op_folder_under_kernels_is_one_line_naming_the_op(tmp_path, command):
    from typer.testing import CliRunner

    from cudabench.cli import app

    folder = tmp_path / "mine" / "reduse"
    folder.mkdir(parents=True)
    (folder / "mine.cu").write_text(_KERNEL.format(op=""))
    args = {"check": ["check"], "list": ["list"], "run": ["run", "reduce", "-s", "1024", *QUICK]}[command]
    result = CliRunner().invoke(
        app, [*args, "--kernels", str(tmp_path / "mine")], env={"CUDABENCH_BACKEND": "fake"}
    )
    _one_line(result, "reduse/", "no op's folder", "did you mean reduce")


def test_3_a_single_cu_file_is_taken_when_its_header_names_an_op(tmp_path):
    from typer.testing import CliRunner

    from cudabench.cli import app

    runner = CliRunner()
    good = tmp_path / "mine.cu"
    good.write_text(_KERNEL.format(op="\n//   op: reduce"))
    listed = runner.invoke(app, ["list", "reduce", "--kernels", str(good)])
    assert listed.exit_code == 0, listed.output
    assert "mine" in listed.stdout and "my reduction" in listed.stdout
    ran = runner.invoke(
        app,
        ["run", "reduce", "-s", "1024", "-v", "mine", *QUICK, "--kernels", str(good), "-o", str(tmp_path)],
        env={"CUDABENCH_BACKEND": "fake"},
    )
    assert ran.exit_code == 0, ran.output

    loose = tmp_path / "loose.cu"
    loose.write_text(_KERNEL.format(op=""))
    _one_line(runner.invoke(app, ["list", "--kernels", str(loose)]), "names no op", "op: reduce")
    wrong = tmp_path / "wrong.cu"
    wrong.write_text(_KERNEL.format(op="\n//   op: reduse"))
    _one_line(runner.invoke(app, ["check", "--kernels", str(wrong)]), "'reduse'", "did you mean reduce")
    plain = tmp_path / "notes.txt"
    plain.write_text("x")
    _one_line(runner.invoke(app, ["list", "--kernels", str(plain)]), "not a folder or a .cu file")
    headless = tmp_path / "headless.cu"
    headless.write_text("__global__ void k() {}\n")
    _one_line(runner.invoke(app, ["list", "--kernels", str(headless)]), "no '// cudabench:' header")
    _one_line(runner.invoke(app, ["list", "--kernels", str(tmp_path / "gone.cu")]), "gone.cu: no such file")


def test_3_a_loose_file_naming_no_op_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from cudabench.cli import app

    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "mine.cu").write_text(_KERNEL.format(op="\n//   op: redcue"))
    _one_line(CliRunner().invoke(app, ["list", "--kernels", str(tmp_path / "k")]), "'redcue'", "reduce")


# ---------------------------------------------------------------- 4: the right diagnosis


def test_4_a_key_written_twice_in_a_config_is_one_line_at_its_line(tmp_path):
    from cudabench.execution.config import ConfigError, load_config

    config = tmp_path / "two.yaml"
    config.write_text("op: reduce\nshapes: [1024]\nop: softmax\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value) == f"{config}:3: the key 'op' is written twice (first at line 1; each key once)"
    nested = tmp_path / "nested.yaml"
    nested.write_text("benchmarks:\n  - op: reduce\n    shapes: [1024]\n    shapes: [2048]\n")
    with pytest.raises(
        ConfigError, match=r"nested.yaml:4: the key 'shapes' is written twice \(first at line 3"
    ):
        load_config(nested)


def test_4_a_config_with_two_ops_does_not_run_the_second(tmp_path):
    from typer.testing import CliRunner

    from cudabench.cli import app

    config = tmp_path / "two.yaml"
    config.write_text("op: reduce\nshapes: [1024]\nop: softmax\n")
    result = CliRunner().invoke(app, ["run", str(config), *QUICK], env={"CUDABENCH_BACKEND": "fake"})
    _one_line(result, f"{config}:3:", "'op' is written twice")


def test_4_a_key_written_twice_in_a_header_is_one_line_at_its_line(tmp_path):
    from cudabench.ops.header import KernelHeaderError, parse_header

    kernel = tmp_path / "k.cu"
    kernel.write_text(
        "#include <x>\n// cudabench:\n//   variant: a\n//   entry: k\n//   block: 256\n"
        "//   grid: segments\n//   about: x\n//   block: 128\n"
    )
    with pytest.raises(KernelHeaderError) as caught:
        parse_header(kernel, "reduce")
    assert str(caught.value) == (
        f"{kernel}:8: header: the key 'block' is written twice (first at line 5; each key once)"
    )


def test_4_every_readme_reference_in_the_package_names_a_section_that_exists():
    """`see README, 'Tuning'`: every mention of the README in the package's messages names
    one of its sections (a bare "see README" or a section that is not there sends the user
    nowhere); every docs/ page a message names exists."""
    import re

    sections = {
        line.lstrip("#").strip().lower()
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("#")
    }
    found = 0
    for path in (ROOT / "cudabench").rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(r"README\b(.{0,40})", text):
            named = re.match(r"""[,:]\s*['"]?([A-Za-z][\w ,&-]*?)['"]?[)"'\s]""", match.group(1))
            assert named, f"{path}: 'README{match.group(1)}' names no section"
            assert named.group(1).lower() in sections, f"{path}: README has no section {named.group(1)!r}"
            found += 1
        for page in re.findall(r"\bdocs/[\w/.-]+\.md", text):
            assert (ROOT / page).is_file(), f"{path}: names {page}, which does not exist"
    assert found >= 2


# ---------------------------------------------------------------- 5: no driver, before planning


@pytest.mark.parametrize("command", ["run", "tune"])
def test_5_a_missing_driver_is_one_line_before_a_big_config_is_planned(tmp_path, monkeypatch, command):
    """20,000 shapes took 50 s to plan before `no NVIDIA driver found` was said: the driver
    is probed first (a stand-in probe here says it does not load), and nothing is planned."""
    from typer.testing import CliRunner

    from cudabench import backends
    from cudabench.cli import app
    from cudabench.execution import plan as planning
    from cudabench.usecases import flow

    config = tmp_path / "big.yaml"
    config.write_text("op: reduce\nshapes:\n" + "".join(f"  - {n}x{1 + n % 7}\n" for n in range(1, 20_001)))
    probed: list[bool] = []

    def no_driver() -> bool:
        probed.append(True)
        return False

    def no_planning(*args, **kwargs):
        raise AssertionError("planned before the driver was probed")

    monkeypatch.setattr(backends, "driver_present", no_driver)
    monkeypatch.setattr(flow, "plan", no_planning)
    monkeypatch.setattr(planning, "plan", no_planning)
    args = [command, str(config), *(QUICK if command == "run" else ["--budget", "2"])]
    started = time.monotonic()
    result = CliRunner().invoke(app, args, env={"CUDABENCH_BACKEND": "cupy"})
    assert time.monotonic() - started < 10
    _one_line(result, "no NVIDIA driver found")
    assert probed


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "nosuchop", "-s", "16"], "unknown op 'nosuchop'"),
        (["tune", "reduc", "-s", "16"], "unknown op 'reduc' (did you mean reduce"),
        (["run", "missing.yaml"], "missing.yaml: no such config file"),
    ],
)
def test_5_a_typo_in_the_op_or_config_is_said_before_the_missing_driver(monkeypatch, args, message):
    """On a machine without a driver, the user's own typo is the line they get: fixing the
    driver first would only lead to it."""
    from typer.testing import CliRunner

    from cudabench import backends
    from cudabench.cli import app

    monkeypatch.setattr(backends, "driver_present", lambda: False)
    result = CliRunner().invoke(app, args, env={"CUDABENCH_BACKEND": "cupy"})
    _one_line(result, message)


def test_5_the_fake_backend_and_a_cluster_are_not_probed(monkeypatch):
    from cudabench import backends
    from cudabench.usecases import flow

    def probe() -> bool:
        raise AssertionError("probed")

    monkeypatch.setattr(backends, "driver_present", probe)
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    flow.require_driver(flow.Local())
    monkeypatch.setenv("CUDABENCH_BACKEND", "cupy")
    flow.require_driver(flow.Cluster("local"))


# ---------------------------------------------------------------- 6: Ctrl-C from the first instant


def _without_site() -> tuple[list[str], dict[str, str]]:
    """`python -S -m cudabench` with the packages' folders on PYTHONPATH: Python's own start
    without the environment's .pth files (site-packages code that runs before any line of
    cudabench: a Ctrl-C there is Python's traceback, not ours to catch)."""
    import site

    paths = [str(ROOT), *site.getsitepackages(), site.getusersitepackages()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "CUDABENCH_HOME": os.devnull}
    env.pop("PYTHONSTARTUP", None)
    return [sys.executable, "-S", "-m", "cudabench", "list"], env


def test_6_ctrl_c_at_any_instant_of_a_command_is_one_line_and_130(tmp_path):
    """Real SIGINTs spread over a whole `cudabench list`, from the process's first
    millisecond to its end: each ends with 'interrupted' and exit 130, or finished, or as
    Python's default outside the interpreter's life (killed by the signal, which a shell
    shows as 130, before Python takes SIGINT or after it gave it back); never a traceback
    through cudabench's code nor a second line. Removing the handling of a Ctrl-C while the CLI's modules load
    (cudabench/__init__.py's _command, cli/__init__.py) fails this: that load is most of
    a `list`."""
    import signal

    command, env = _without_site()
    begin = time.monotonic()
    whole = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    span = time.monotonic() - begin
    assert whole.returncode == 0, whole.stderr
    outcomes = []
    for step in range(20):
        proc = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        time.sleep(span * step / 20)
        proc.send_signal(signal.SIGINT)
        _, errors = proc.communicate(timeout=60)
        if "Traceback" in errors and f"cudabench{os.sep}" not in errors:
            # Python's own start, before any line of cudabench (runpy's imports): its own
            # traceback, as docs/reference/exit-codes.md says; not ours to catch
            continue
        said = [line for line in errors.splitlines() if line.strip() and not line.startswith("note: ")]
        assert "Traceback" not in errors, errors
        assert proc.returncode in (0, 130, -signal.SIGINT) and said in ([], ["interrupted"]), (
            proc.returncode,
            errors,
        )
        assert proc.returncode != 130 or said == ["interrupted"], errors
        outcomes.append(proc.returncode)
    assert outcomes.count(130) >= 5, outcomes  # most of the spread landed while cudabench ran
