"""The CLI through typer's CliRunner, with the fake backend standing in for the GPU."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_kernel
from typer.testing import CliRunner

from cudabench.cli import app

runner = CliRunner()
FAKE = {"CUDABENCH_BACKEND": "fake"}
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
HEADER = """\
// cudabench:
//   variant: {name}
//   entry: {entry}
//   block: 256
//   grid: segments
//   about: a fault the fake backend plays
"""


def run(*args, env=FAKE):
    return runner.invoke(app, list(args), env=env)


def test_import_help_list_need_no_cupy():
    code = (
        "import sys, cudabench, cudabench.cli, cudabench.measure.runner, cudabench.present.tables;"
        "assert 'cupy' not in sys.modules, 'cupy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    for args in (["--help"], ["list"], ["run", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-m", "cudabench", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )
        assert proc.returncode == 0, proc.stderr


def test_list_shows_variants_with_about():
    result = run("list", "reduce")
    assert result.exit_code == 0
    for name in ("naive", "shared", "shuffle", "float4", "atomic", "cupy"):
        assert name in result.stdout
    assert "seed 002" in result.stdout and "out[row]" in result.stdout


def test_run_writes_table_and_files(tmp_path):
    result = run("run", "reduce", "--shape", "64x129", "--shape", "2^10", *QUICK, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "★" in result.stdout and "Fake GPU" in result.stdout
    (json_path,) = tmp_path.glob("*_reduce.json")
    doc = json.loads(json_path.read_text())
    assert doc["meta"]["complete"] is True and doc["meta"]["timing_mode"] == "hot"
    assert "--shape 64x129" in doc["meta"]["command"]
    assert {r["shape"] for r in doc["rows"]} == {"64x129", "1024"}
    assert len(doc["rows"]) == 2 * 6 and all(r["status"] == "OK" for r in doc["rows"])
    assert json_path.with_suffix(".csv").exists()
    assert 'ncu --nvtx --nvtx-include "cudabench@reduce/' in result.stderr


def test_run_json_and_variant_selection(tmp_path):
    result = run(
        "run",
        "reduce",
        "-s",
        "3x5",
        "-v",
        "float4",
        "--cold",
        "--json",
        *QUICK,
        "-o",
        str(tmp_path / "x.json"),
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["variant"] for r in doc["rows"]] == ["float4", "cupy"]
    assert doc["meta"]["timing_mode"] == "cold" and doc["rows"][0]["method"] == "single"
    assert (tmp_path / "x.json").exists()


def test_run_config_file(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        "op: reduce\nshapes: [5]\nvariants: [shuffle]\ntiming: {min_samples: 2, "
        "min_time_s: 0, max_time_s: 0.01}\n"
    )
    result = run("run", str(config), "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [r["variant"] for r in doc["rows"]] == ["shuffle", "cupy"]


def test_failed_kernel_is_a_row_and_exit_1(tmp_path, kernel_dir):
    write_kernel(kernel_dir, "mine", "")  # the fake backend has no such kernel: COMPILE_ERROR
    result = run("run", "reduce", "-s", "8", "--kernels", str(kernel_dir), *QUICK, "-o", str(tmp_path))
    assert result.exit_code == 1
    assert "1 failed" in result.stderr and "reduce 8 float32 mine: COMPILE_ERROR" in result.stderr
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert sum(r["status"] == "OK" for r in doc["rows"]) == 6


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "reduc", "-s", "5"], "unknown op 'reduc' (did you mean reduce"),
        (["run", "reduce", "-s", "442368x"], "empty dimension"),
        (["run", "reduce", "-s", "0x5"], "positive"),
        (["run", "reduce", "-s", "-1"], "positive"),
        (["run", "reduce", "-s", "abc"], "not a number"),
        (["run", "reduce", "-s", "2x3x4"], "1-D (cols) or 2-D (rows x cols) shape"),
        (["run", "reduce", "-s", "5", "-v", "flaot4"], "unknown variant 'flaot4' (did you mean float4"),
        (["run", "missing.yaml"], "missing.yaml: no such config file"),
        (["run", "reduce", "-s", "5", "--kernels", "/no/such/dir"], "--kernels /no/such/dir: no such folder"),
        (["list", "nope"], "unknown op 'nope'"),
        (["check", "--arch", "gfx90a"], "not an arch like sm_90"),
        (["run", "nosuchop", "-s", "16"], "unknown op 'nosuchop'"),
        (["check", "nosuchop"], "unknown op 'nosuchop'"),
        (["report", "/nonexistent/run.json"], "/nonexistent/run.json: no such results file"),
        (["compare", "/nonexistent/a.json", "/nonexistent/b.json"], "/nonexistent/a.json: no such"),
        (["history", "nosuchop"], "unknown op 'nosuchop'"),
        (["run", "relu", "-s", "1024", "--gpu-model", "H200"], "give it with --cluster"),  # was ignored
        (["cluster", "status", "--cluster", "foo"], "missing port number"),  # at once, not after 10 s
        (["tune", "reduce", "-s", "abc", "-v", "float4"], "not a number"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["run", "reduce", "--shape", "abc"], {}, "not a number"),
        (["report", "/nonexistent/run.json"], {}, "no such results file"),
        (["compare", "/nonexistent/a.json", "/nonexistent/b.json"], {}, "no such results file"),
        (["run", "nosuchop", "-s", "16"], {}, "unknown op 'nosuchop'"),
        (["check", "nosuchop"], {}, "unknown op 'nosuchop'"),
        (["check", "reduce"], {"CUDABENCH_NVCC": "/nonexistent/nvcc"}, "CUDABENCH_NVCC"),
    ],
)
@pytest.mark.parametrize("entry", ["script", "module"])
def test_the_command_itself_says_a_mistake_in_one_line(tmp_path, args, env, message, entry):
    """As a user runs it: the `cudabench` script the install put beside this Python (CI's
    README install), and `python -m cudabench`, both cudabench._command, whose cli.main turns
    errors into one line; not typer's app under CliRunner."""
    script = Path(sys.executable).parent / "cudabench"
    if entry == "script" and not script.is_file():
        pytest.skip(f"no {script}: cudabench is not installed beside this Python")
    command = [str(script)] if entry == "script" else [sys.executable, "-m", "cudabench"]
    proc = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **FAKE, **env, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


def test_missing_nvcc_for_check_is_one_line_and_exit_2(tmp_path):
    result = run("check", "reduce", env={**FAKE, "CUDABENCH_NVCC": str(tmp_path / "nvcc")})
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDABENCH_NVCC" in lines[0] and "no such file" in lines[0]


@pytest.mark.nvcc
def test_check_compiles_an_op_for_every_dtype_and_arch(tmp_path):
    """`cudabench check` end to end with the real nvcc: each (variant, dtype, arch) a row.
    (It once passed the dtype as the arch and died on its first kernel.)"""
    result = run(
        "check",
        "transpose",
        "--arch",
        "sm_80",
        "--arch",
        "sm_90",
        env={**FAKE, "CUDABENCH_CACHE": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    for arch in ("sm_80", "sm_90"):
        for dtype in ("float32", "float16", "bfloat16"):
            assert f"smem64 {dtype} {arch}: ok" in result.stderr


def test_config_with_unknown_key_is_exit_2(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("op: reduce\nshapes: [5]\ncolour: red\n")
    result = run("run", str(config))
    assert result.exit_code == 2 and "c.yaml:3: unknown key 'colour'" in result.stderr


def test_unwritable_output_is_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("run", "reduce", "-s", "5", *QUICK, "-o", str(blocker / "sub" / "x.json"))
    assert result.exit_code == 2 and "cannot write results" in result.stderr


def test_no_gpu_is_one_line_and_exit_2():
    result = run("run", "reduce", "-s", "5", env={"CUDABENCH_BACKEND": "nosuch"})
    assert result.exit_code == 2 and "unknown backend" in result.stderr


def test_ctrl_c_keeps_finished_rows_marked_incomplete(tmp_path, kernel_dir):
    import signal
    import time

    write_kernel(kernel_dir, "stuck", "", header=HEADER.format(name="stuck", entry="fake_hang"))
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cudabench",
            "run",
            "reduce",
            "-s",
            "8",
            "-v",
            "float4",
            "-v",
            "naive",
            "-v",
            "stuck",
            "--kernels",
            str(kernel_dir),
            *QUICK,
            "-o",
            str(out),
        ],
        env={**os.environ, **FAKE, "PYTHONPATH": str(Path.cwd())},
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the two rows before the hanging one are saved
        if out.exists() and len(json.loads(out.read_text())["rows"]) == 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, stderr = proc.communicate(timeout=20)
    assert time.monotonic() - started < 5  # promptly, hanging worker or not
    assert proc.returncode == 130 and "interrupted: 2 finished rows kept" in stderr
    doc = json.loads(out.read_text())
    assert doc["meta"]["complete"] is False
    assert [r["variant"] for r in doc["rows"]] == ["float4", "naive"]
    assert all(r["status"] == "OK" for r in doc["rows"])


def test_interleave_flag_reaches_the_table_and_the_file(tmp_path):
    result = run("run", "reduce", "-s", "8x8", "--interleave", *QUICK, "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0 and "interleaved" in result.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["meta"]["timing"]["interleave"] is True and "--interleave" in doc["meta"]["command"]


def test_planted_faults_in_one_sweep_cost_one_row_each(tmp_path, kernel_dir):
    for name, entry in (
        ("oob", "fake_crash"),
        ("gone", "fake_die"),
        ("stuck", "fake_hang"),
        ("noisy", "fake_garbage"),
    ):
        write_kernel(kernel_dir, name, "", header=HEADER.format(name=name, entry=entry))
    write_kernel(kernel_dir, "broken", "", header="// cudabench:\n//   variant: [unclosed\n")
    result = run(
        "run",
        "reduce",
        "-s",
        "8x64",
        "-s",
        "7",
        "--kernels",
        str(kernel_dir),
        "--timeout",
        "2",
        *QUICK,
        "-o",
        str(tmp_path / "r.json"),
    )
    assert result.exit_code == 1, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["meta"]["complete"] is True
    status = {(r["shape"], r["variant"]): r["status"] for r in doc["rows"]}
    assert len(status) == 2 * 10  # 5 built-in + 4 faults + cupy, at both shapes
    for shape in ("8x64", "7"):
        assert status[(shape, "oob")] == "CRASH" and status[(shape, "gone")] == "CRASH"
        assert status[(shape, "stuck")] == "TIMEOUT" and status[(shape, "noisy")] == "ERROR"
        for good in ("atomic", "float4", "naive", "shared", "shuffle", "cupy"):
            assert status[(shape, good)] == "OK"
    assert "broken.cu:2" in result.stderr  # the bad header: file and line, the others ran
    assert "reduce 8x64 float32 stuck: TIMEOUT" in result.stderr and "Traceback" not in result.output


def test_devices_all_spreads_the_cases(tmp_path):
    env = {**FAKE, "CUDABENCH_FAKE_DEVICES": "2"}
    result = run(
        "run",
        "reduce",
        "-s",
        "8",
        "-s",
        "9",
        "-s",
        "10",
        "-s",
        "11",
        "--devices",
        "all",
        *QUICK,
        "-o",
        str(tmp_path / "r.json"),
        env=env,
    )
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["meta"]["devices"] == [0, 1]
    assert {r["device"] for r in doc["rows"]} == {0, 1}
    assert [r["shape"] for r in doc["rows"]][::6] == ["8", "9", "10", "11"]  # in case order


@pytest.mark.parametrize(
    "value, message",
    [
        ("x", "GPU indices"),
        ("0,0", "distinct"),
        ("-1", "a GPU index is 0 or more"),
        ("5", "GPU 5 does not exist"),
    ],
)
def test_bad_devices_are_usage_errors(value, message):
    result = run("run", "reduce", "-s", "8", "--devices", value)
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _ppid(proc_dir: Path) -> int | None:
    try:
        return int(proc_dir.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_killing_the_tool_kills_its_workers_and_keeps_the_rows(tmp_path, kernel_dir):
    import signal
    import time

    write_kernel(kernel_dir, "stuck", "", header=HEADER.format(name="stuck", entry="fake_hang"))
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cudabench",
            "run",
            "reduce",
            "-s",
            "8",
            "-v",
            "float4",
            "-v",
            "stuck",
            "--kernels",
            str(kernel_dir),
            *QUICK,
            "-o",
            str(out),
        ],
        env={**os.environ, **FAKE, "PYTHONPATH": str(Path.cwd())},
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if out.exists() and len(json.loads(out.read_text())["rows"]) == 1:
            break
        time.sleep(0.05)
    workers = [int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit() and _ppid(d) == proc.pid]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1.0)
    alive = [
        p
        for p in workers
        if Path(f"/proc/{p}").exists()
        and "cudabench.execution.worker" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
    ]
    assert workers and not alive  # the hanging worker went with its parent
    doc = json.loads(out.read_text())
    assert doc["meta"]["complete"] is False and [r["variant"] for r in doc["rows"]] == ["float4"]


@pytest.mark.parametrize(
    "op, shape",
    [
        ("reduce", "33x7"),
        ("reduce_max", "33x7"),
        ("reduce_scale", "33x130"),
        ("softmax", "9x130"),
        ("softmax", "1000"),
        ("add", "1001"),
        ("sigmoid", "1001"),
        ("relu", "1001"),
        ("transpose", "33x31"),
        ("gemv", "33x31"),
        ("sgemm", "33x31x17"),
    ],
)
def test_every_op_runs_end_to_end(op, shape, tmp_path):
    result = run("run", op, "-s", shape, *QUICK, "-o", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert {r["status"] for r in rows} <= {"OK", "N/A"}
    assert any(r["status"] == "OK" and not r["is_baseline"] for r in rows)
    if op == "sgemm":
        assert all(r["gflops"] for r in rows if r["status"] == "OK")
        assert "GFLOP/s" in result.stdout


def test_a_shape_too_large_is_a_skipped_row_and_the_others_run(tmp_path):
    result = run("run", "reduce", "-s", "1024", "-s", "2^40", *QUICK, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    (json_path,) = tmp_path.glob("*_reduce.json")
    rows = json.loads(json_path.read_text())["rows"]
    by_shape = {}
    for r in rows:
        by_shape.setdefault(r["shape"], set()).add(r["status"])
    assert by_shape == {"1024": {"OK"}, "1099511627776": {"SKIPPED"}}
    skipped = next(r for r in rows if r["status"] == "SKIPPED")
    assert skipped["error"].startswith("needs 8796.16 GB of GPU memory, 107.37 GB free")


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "reduce", "--shapes", "4"], "No such option: --shapes"),
        (["run", "reduce", "--min-samples", "0"], "'--min-samples'"),
        (["run"], "Missing argument 'target'"),
        (["compare", "a", "b", "c"], "unexpected extra argument"),
        (["report", "-s"], "requires an argument"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, args, message):
    from cudabench.cli import main

    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


def test_version_and_short_help(capsys):
    from cudabench.cli import main
    from cudabench.core.version import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"cudabench {__version__}"
    with pytest.raises(SystemExit) as info:
        main(["run", "-h"])
    assert info.value.code == 0 and "--shape" in capsys.readouterr().out


def test_profile_hint_names_the_starred_fastest_variant(tmp_path):
    result = run("run", "reduce", "-s", "1024", *QUICK, "-o", str(tmp_path))
    hint = next(line for line in result.stderr.splitlines() if line.startswith("profile it:"))
    starred = next(line for line in result.stdout.splitlines() if "★" in line)
    variant = hint.split("--variant ")[1].split()[0]
    assert variant in starred, (hint, starred)
    assert variant != "atomic"  # alphabetically first, and not the fastest in the fake's clock
    assert str(tmp_path.resolve()) in result.stderr  # where the results went, in full


def test_configs_are_found_from_any_directory_and_nvcc_is_checked_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(
        "run", "configs/reduce.yaml", "-s", "1024", "-v", "float4", *QUICK, "-o", str(tmp_path / "out")
    )
    assert result.exit_code == 0, result.output
    from cudabench import backends

    monkeypatch.setattr(backends, "driver_present", lambda: True)  # a driver, so nvcc is what is missing
    missing = run("run", "reduce", "-s", "1024", env={"CUDABENCH_NVCC": str(tmp_path / "nvcc")})
    assert missing.exit_code == 2 and "CUDABENCH_NVCC" in missing.stderr and "no such file" in missing.stderr


def test_list_explains_missing_torch(monkeypatch):
    from cudabench.ops import torch_baselines

    monkeypatch.setattr(torch_baselines, "available", lambda: False)
    result = run("list", "softmax")
    assert "torch is not importable" in result.stderr and "[torch]" in result.stderr


def test_a_flat_kernels_file_joins_only_the_op_it_names(tmp_path):
    write_kernel(
        tmp_path,
        "mine",
        "",
        header=HEADER.format(name="mine", entry="reduce_sum_float4") + "//   op: reduce\n",
    )
    listed = run("list", "--kernels", str(tmp_path))
    assert listed.stdout.count("mine") == 1
    as_add = run("run", "add", "-s", "1024", "--kernels", str(tmp_path), *QUICK, "-o", str(tmp_path / "o"))
    assert as_add.exit_code == 0, as_add.output
    assert "mine" not in as_add.stdout


def test_no_driver_reads_differently_from_an_old_driver(monkeypatch):
    pytest.importorskip("cupy")
    from cudabench.backends import cupy_backend

    insufficient = RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    monkeypatch.setattr(cupy_backend, "driver_present", lambda: False)
    assert cupy_backend.no_gpu_reason(insufficient).startswith("no NVIDIA driver found")
    monkeypatch.setattr(cupy_backend, "driver_present", lambda: True)
    assert "driver is older than CUDA" in cupy_backend.no_gpu_reason(insufficient)


def test_without_a_terminal_progress_is_a_line_now_and_then_and_an_error_has_no_blank_line(
    tmp_path, monkeypatch
):
    """CliRunner's stderr is no terminal (as a CI log or a pipe): no bar is drawn, a
    `progress:` line comes every Bar.LOG_EVERY_S seconds instead (0 here: every row), and a
    refusal once the run has begun is its one error line, with no blank line before it."""
    from cudabench.cli.render import Bar

    monkeypatch.setattr(Bar, "LOG_EVERY_S", 0.0)
    done = run("run", "relu", "-s", "1024", "-v", "naive", *QUICK, "-o", str(tmp_path / "a.json"))
    assert done.exit_code == 0, done.output
    lines = [line for line in done.stderr.splitlines() if line.startswith("progress: ")]
    assert lines and lines[0].startswith("progress: 1/") and "relu naive 1024 float32" in lines[0]
    again = run("run", "relu", "-s", "1024", "-v", "naive", *QUICK, "-o", str(tmp_path / "a.json"))
    assert again.exit_code == 2 and again.stderr.startswith("error: "), repr(again.stderr)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_check_names_the_archs_nvcc_has_for_one_it_lacks():
    result = run("check", "--arch", "sm_999", "relu")
    assert result.exit_code == 2 and "compiles for sm_" in result.stderr and "sm_90" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_click_usage_error_points_to_the_subcommands_help(capsys):
    """`run reduce -s` with no shape: click reports it without the subcommand's context;
    the line still points to `cudabench run --help`, not the top-level help."""
    from cudabench.cli import main

    with pytest.raises(SystemExit) as done:
        main(["run", "reduce", "-s"])
    assert done.value.code == 2
    said = capsys.readouterr().err
    assert "requires an argument" in said and "(see cudabench run --help)" in said
    assert len(said.strip().splitlines()) == 1


def test_a_shape_the_op_does_not_take_is_said_before_the_missing_driver(monkeypatch):
    """The user's own mistake first: on a machine without a driver, `run reduce -s 2x3x4`
    said 'no NVIDIA driver found', which the user could not fix by fixing the shape."""
    from cudabench import backends

    monkeypatch.setattr(backends, "driver_present", lambda: False)
    monkeypatch.delenv("CUDABENCH_BACKEND", raising=False)
    result = runner.invoke(app, ["run", "reduce", "-s", "2x3x4"])
    assert result.exit_code == 2 and "shape 2x3x4: reduce takes a 1-D" in result.stderr
    no_driver = runner.invoke(app, ["run", "reduce", "-s", "2x3"])
    assert no_driver.exit_code == 2 and "no NVIDIA driver found" in no_driver.stderr
