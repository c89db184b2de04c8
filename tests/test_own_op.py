"""A new op outside the package, written only from docs/guide/ops.md (its rmsnorm op file, a right
and a planted-wrong .cu, a Python variant), run end to end through the CLI on the fake
backend in worker processes: the wrong variant FAILs, the others are OK. And the scaffold of
`cudabench new op`, and `check`'s parameter count against the op's argument list."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudabench.cli import app

DOCS = Path(__file__).resolve().parent.parent / "docs" / "guide" / "ops.md"
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
runner = CliRunner()


def files_from_docs(folder: Path) -> list[Path]:
    """Each fenced block of docs/guide/ops.md whose first line names a file (`# rmsnorm/op.py`,
    `// rmsnorm/naive.cu`), written under `folder`."""
    written = []
    for block in re.findall(r"```\w*\n(.*?)```", DOCS.read_text(), re.DOTALL):
        first = block.splitlines()[0]
        named = re.fullmatch(r"(?:#|//) (rmsnorm/[\w.]+)", first.strip())
        if named:
            path = folder / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block)
            written.append(path)
    return written


def test_a_new_op_from_the_docs_runs_end_to_end_on_the_fake_backend(tmp_path):
    written = files_from_docs(tmp_path / "myops")
    assert sorted(p.name for p in written) == [
        "naive.cu",
        "op.py",
        "triton_rows.py",
        "wrong.cu",
        "xp_rows.py",
    ]
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_OPS": str(tmp_path / "myops")}
    listed = runner.invoke(app, ["list", "rmsnorm", "--ops", str(tmp_path / "myops")])
    assert listed.exit_code == 0, listed.output
    assert all(name in listed.stdout for name in ("naive", "wrong", "xp_rows", "triton_rows", "cupy"))
    result = runner.invoke(
        app,
        [
            "run",
            "rmsnorm",
            "--ops",
            str(tmp_path / "myops"),
            "-s",
            "64x1000",
            "-s",
            "3x4x100",
            *QUICK,
            "-o",
            str(tmp_path / "out"),
        ],
        env={"CUDABENCH_BACKEND": "fake"},
    )
    assert result.exit_code == 1, result.output  # the planted wrong variant fails
    doc = json.loads(next((tmp_path / "out").glob("*_rmsnorm.json")).read_text())
    rows = {(r["shape"], r["variant"]): r for r in doc["rows"]}
    for shape in ("64x1000", "3x4x100"):
        assert rows[(shape, "naive")]["status"] == "OK"
        assert rows[(shape, "xp_rows")]["status"] == "OK" and not rows[(shape, "xp_rows")]["is_baseline"]
        assert rows[(shape, "cupy")]["status"] == "OK" and rows[(shape, "cupy")]["is_baseline"]
        assert rows[(shape, "wrong")]["status"] == "FAIL"
        assert rows[(shape, "triton_rows")]["status"] == "N/A"  # it needs GPU arrays
        assert "outputs wrong" in rows[(shape, "wrong")]["error"]
    assert rows[("64x1000", "naive")]["bytes_moved"] == 4 * (2 * 64 * 1000 + 1000)
    bf16 = runner.invoke(
        app, ["run", "rmsnorm", "-s", "8x256", "-d", "bfloat16", *QUICK, "-o", str(tmp_path / "bf")], env=env
    )
    assert bf16.exit_code == 0, bf16.output
    doc = json.loads(next((tmp_path / "bf").glob("*_rmsnorm.json")).read_text())
    assert {r["variant"]: r["status"] for r in doc["rows"]} == {
        "naive": "OK",
        "triton_rows": "N/A",
        "cupy": "OK",
    }  # wrong and xp_rows are float32 only


def test_the_scaffold_lists_runs_and_refuses_to_overwrite(tmp_path):
    for style, name in (("row", "rms_lite"), ("elementwise", "silu")):
        made = runner.invoke(app, ["new", "op", name, "--in", str(tmp_path / "mine"), "--style", style])
        assert made.exit_code == 0, made.output
        assert (tmp_path / "mine" / name / "op.py").is_file()
        assert (tmp_path / "mine" / name / "naive.cu").is_file()
    again = runner.invoke(app, ["new", "op", "silu", "--in", str(tmp_path / "mine")])
    assert again.exit_code == 2 and again.stderr.strip() == (
        f"error: {tmp_path / 'mine' / 'silu'} exists already: choose another name or folder"
    )
    taken = runner.invoke(app, ["new", "op", "softmax", "--in", str(tmp_path / "mine")])
    assert taken.exit_code == 2 and "op 'softmax' exists already" in taken.stderr
    bad = runner.invoke(app, ["new", "op", "my-op", "--in", str(tmp_path / "mine")])
    assert bad.exit_code == 2 and "must be a C identifier" in bad.stderr
    listed = runner.invoke(app, ["list", "--ops", str(tmp_path / "mine")])
    assert listed.exit_code == 0 and "rms_lite_naive (BLOCK=256, row); tunes BLOCK" in listed.stdout
    env = {"CUDABENCH_BACKEND": "fake"}
    for name, shape in (("rms_lite", "16x300"), ("silu", "1000")):
        ran = runner.invoke(
            app,
            [
                "run",
                name,
                "--ops",
                str(tmp_path / "mine"),
                "-s",
                shape,
                "-d",
                "float16",
                *QUICK,
                "-o",
                str(tmp_path / name),
            ],
            env=env,
        )
        assert ran.exit_code == 0, ran.output
        doc = json.loads(next((tmp_path / name).glob("*.json")).read_text())
        assert [(r["variant"], r["status"]) for r in doc["rows"]] == [("naive", "OK"), ("cupy", "OK")]


def test_a_missing_ops_folder_and_a_broken_op_are_one_line(tmp_path):
    missing = runner.invoke(app, ["list", "--ops", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert missing.stderr.strip() == f"error: --ops {tmp_path / 'nope'}: no such folder"
    (tmp_path / "ops" / "broken").mkdir(parents=True)
    (tmp_path / "ops" / "broken" / "op.py").write_text(
        "from cudabench.op import Op\nraise ValueError('half done')\n"
    )
    listed = runner.invoke(app, ["list", "--ops", str(tmp_path / "ops")])
    assert listed.exit_code == 0
    warning = f"warning: {tmp_path / 'ops' / 'broken' / 'op.py'}:2: ValueError: half done"
    assert warning in " ".join(listed.stderr.split())
    asked = runner.invoke(app, ["list", "broken", "--ops", str(tmp_path / "ops")])
    assert asked.exit_code == 2 and asked.stderr.count("\n") == 1 and "ValueError: half done" in asked.stderr


@pytest.mark.nvcc
def test_check_compiles_the_scaffold_and_counts_each_kernels_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    made = runner.invoke(app, ["new", "op", "rms_lite", "--in", str(tmp_path / "mine")])
    assert made.exit_code == 0, made.output
    checked = runner.invoke(app, ["check", "rms_lite", "--ops", str(tmp_path / "mine"), "--arch", "sm_80"])
    assert checked.exit_code == 0, checked.output
    kernel = tmp_path / "mine" / "rms_lite" / "naive.cu"
    kernel.write_text(kernel.read_text().replace("float eps) {", "float eps, int extra) {"))
    bad = runner.invoke(app, ["check", "rms_lite", "--ops", str(tmp_path / "mine"), "--arch", "sm_80"])
    assert bad.exit_code == 1
    line = next(ln for ln in bad.stderr.splitlines() if "parameters" in ln)
    assert line == (
        f"error: {kernel}:18: rms_lite_naive takes 6 parameters, but rms_lite passes 5: "
        "(x, out, rows, cols, eps)"
    )


def test_tune_profile_and_the_api_take_ops(tmp_path, monkeypatch):
    """The scaffold's op outside the package through every front door: tune searches its
    BLOCK, profile runs it under (a stand-in) ncu from the plan it was handed, the API runs it."""
    import os
    import stat
    import sys

    import cudabench

    mine = tmp_path / "mine"
    assert runner.invoke(app, ["new", "op", "rms_lite", "--in", str(mine)]).exit_code == 0
    env = {"CUDABENCH_BACKEND": "fake"}
    tuned = runner.invoke(
        app,
        [
            "tune",
            "rms_lite",
            "--ops",
            str(mine),
            "-s",
            "16x300",
            "--budget",
            "2",
            "--no-save",
            "--no-plot",
            "-o",
            str(tmp_path / "t"),
        ],
        env=env,
    )
    assert tuned.exit_code == 0, tuned.output
    assert "best BLOCK=" in tuned.stderr
    ncu = tmp_path / "bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(f'#!/bin/sh\nexec {sys.executable} {Path(__file__).parent / "fake_ncu.py"} "$@"\n')
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    path = os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])
    profiled = runner.invoke(
        app,
        [
            "profile",
            "rms_lite",
            "--ops",
            str(mine),
            "-s",
            "16x300",
            "--ncu",
            str(ncu),
            "-o",
            str(tmp_path / "p"),
        ],
        env={**env, "PYTHONPATH": path},
    )
    assert profiled.exit_code == 0, profiled.output
    rows = json.loads(next((tmp_path / "p").glob("*.json")).read_text())["rows"]
    assert {r["variant"]: r["status"] for r in rows} == {"naive": "OK", "cupy": "OK"}
    assert all(r["ncu"] for r in rows)  # each row joined to its own range's kernels
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    df = cudabench.run(
        "rms_lite",
        shapes="16x300",
        ops=mine,
        output=tmp_path / "api",
        ceilings=False,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
    assert set(df["variant"]) == {"naive", "cupy"} and (df["status"] == "OK").all()
