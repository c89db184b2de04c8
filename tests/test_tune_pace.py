"""scripts/tune_pace.py without a GPU: the user's op folder it writes (its 162-configuration
space, its grid rule, its kernel's argument list against the op's), a narrowed search and a
run of odd shapes through the fake backend, the script's parsing of tune's summary lines, and
the whole script end to end on the fake backend with --quick. The fake backend computes the
op's reference for every launch of a .cu variant whose entry its file defines, so an OK row
here checks the plumbing (shapes, arguments, grid rule, tolerance, baselines), not the
kernel's arithmetic: that is for the GPU run (and `cudabench check` compiles it here)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from cudabench.cli import app

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "tune_pace.py"
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
FAKE = {"CUDABENCH_BACKEND": "fake", "COLUMNS": "200"}
runner = CliRunner()


def load_script():
    spec = importlib.util.spec_from_file_location("tune_pace", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pace():
    return load_script()


@pytest.fixture
def ops(pace, tmp_path: Path) -> Path:
    pace.write_op(tmp_path / "ops")
    return tmp_path / "ops"


def test_the_op_folder_is_a_users_op_with_162_configurations(pace, ops):
    assert sorted(p.name for p in (ops / "rowsum").iterdir()) == ["op.py", "warp.cu"]
    result = runner.invoke(
        app, ["tune", "rowsum", "--ops", str(ops), "-s", "442368x128", "--space"], env=FAKE
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "rowsum" in line and "warp" in line)
    assert re.search(r"│\s*162\s*│\s*162\s*│", row), row  # valid, of: no constraint leaves one out
    assert math.prod(len(v) for v in pace.USER.values()) == 162


def test_the_grid_rule_covers_every_row_with_rows_a_warp(ops):
    from cudabench.ops.registry import load_op_file

    op = load_op_file(ops / "rowsum" / "op.py")
    assert op.arg_roles() == (("input", "x"), ("output", "out"), ("scalar", "rows"), ("scalar", "cols"))
    rule = op.rules["warp_groups"]
    for rows, rows_a_warp, block in [(33, 4, 64), (7, 1, 1024), (442368, 2, 256), (1, 4, 32)]:
        at = SimpleNamespace(
            value=lambda name, default, v=rows_a_warp: v, block=block, dims=SimpleNamespace(rows=rows)
        )
        grid = rule(at).grid
        assert (grid - 1) * rows_a_warp * block // 32 < rows <= grid * rows_a_warp * block // 32


def test_a_narrowed_search_and_odd_shapes_run_ok_on_the_fake_backend(pace, ops, tmp_path):
    narrowed = ["-p", "BLOCK=32,1024", "-p", "ROWS=4", "-p", "UNROLL=1", "-p", "VEC=1,4"]
    tune = ["tune", "rowsum", "--ops", str(ops), "-s", "33x129", *narrowed, "--strategy", "exhaustive"]
    result = runner.invoke(app, [*tune, "--no-save", "--no-plot", "-o", str(tmp_path / "tune")], env=FAKE)
    assert result.exit_code == 0, result.output
    parsed = pace.parse_tune({"output": result.output}, tmp_path / "tune")
    assert parsed["measured"] == parsed["configurations"] == 4 and parsed["failed"] is None
    assert parsed["per_config_ms"] is not None and parsed["setup_ms"] is not None and parsed["rounds_s"] >= 0
    assert parsed["best"]["ROWS"] == 4 and parsed["best"]["BLOCK"] in (32, 1024) and parsed["best_us"] > 0
    rows = pace.rows_of(tmp_path / "tune")
    assert {r["status"] for r in rows} == {"OK"} and len([r for r in rows if not r["is_baseline"]]) == 5
    run = [
        "run",
        "rowsum",
        "--ops",
        str(ops),
        "-s",
        "33x129",
        "-s",
        "7x1",
        *QUICK,
        "-o",
        str(tmp_path / "run"),
    ]
    result = runner.invoke(app, run, env=FAKE)
    assert result.exit_code == 0, result.output
    found = {(r["shape"], r["variant"]): r for r in pace.rows_of(tmp_path / "run")}
    assert set(found) == {(s, v) for s in ("33x129", "7x1") for v in ("warp", "cupy")}
    assert all(r["status"] == "OK" for r in found.values())
    assert found[("7x1", "warp")]["params"] == "BLOCK=256,ROWS=1,UNROLL=2,VEC=4"  # the header's defaults


@pytest.mark.nvcc
def test_the_kernel_compiles_and_its_parameters_match_the_op(ops, tmp_path):
    env = {"CUDABENCH_CACHE": str(tmp_path / "cache")}
    result = runner.invoke(app, ["check", "--ops", str(ops), "rowsum"], env=env)
    assert result.exit_code == 0, result.output


def test_the_script_end_to_end_on_the_fake_backend(tmp_path):
    out = tmp_path / "pace"
    env = {**os.environ, "CUDABENCH_BACKEND": "fake"}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--quick", "--devices-all"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((out / "tune_pace.json").read_text())
    assert report["backend"] == "fake" and report["date_utc"]
    for name in ("compile", "one_gpu", "all_gpus"):
        run = report["reduce"][name]
        assert run["rc"] == 0 and run["measured"] == 4 and run["summary_line"].startswith("exhaustive:")
        assert run["costs_line"].startswith("where the time went:") and run["per_config_ms"] is not None
    user = report["user"]
    assert user["cudabench"]["measured"] == 8 and user["cudabench"]["best"]["BLOCK"] in (32, 256)
    assert user["kernel_tuner"] == {"skipped": "CUDABENCH_BACKEND=fake: no GPU"}
    assert user["head_to_head"]["rc"] == 0
    assert set(user["head_to_head"]["rows_us"]) == {
        "cupy",
        ",".join(f"{k}={v}" for k, v in user["cudabench"]["best"].items()),
    }
    assert [s["step"] for s in report["steps"]] == [
        "reduce_compile",
        "reduce_one_gpu",
        "reduce_all_gpus",
        "user_warm_cupy_cache",
        "user_cudabench_tune",
        "user_head_to_head",
    ]
    # the user's kernel compiled from an empty cache; CuPy's cache, holding cudabench's own
    # kernels, the one a run of the default configuration (into another compile cache) filled
    warm, tune = (
        next(s["env"] for s in report["steps"] if s["step"] == n)
        for n in ("user_warm_cupy_cache", "user_cudabench_tune")
    )
    assert (
        warm["CUPY_CACHE_DIR"] == tune["CUPY_CACHE_DIR"]
        and warm["CUDABENCH_CACHE"] != tune["CUDABENCH_CACHE"]
    )
    assert user["first_run"] is False
    assert all((out / s["log"]).is_file() and "+" not in s["log"] for s in report["steps"])
    assert "| user cudabench | 0 |" in proc.stdout and not (out / "caches").exists()
