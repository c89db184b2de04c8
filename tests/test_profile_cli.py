"""`cudabench profile` end to end without a GPU: the fake backend runs the kernels and
tests/fake_ncu.py stands in for Nsight Compute (it runs the profiled child and writes a raw
CSV page built from a real one)."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudabench.cli import app

runner = CliRunner()
FAKE_NCU = Path(__file__).parent / "fake_ncu.py"
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]


@pytest.fixture
def ncu(tmp_path: Path) -> str:
    script = tmp_path / "bin" / "ncu"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_NCU} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def profile(*args: str, mode: str = "", l2_hit: str = "", columns: str | None = None):
    env = {
        "CUDABENCH_BACKEND": "fake",
        "FAKE_NCU": mode,
        "FAKE_NCU_L2_HIT": l2_hit,
        "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]),
    }
    if columns:
        env["COLUMNS"] = columns
    return runner.invoke(app, ["profile", *args], env=env)


def rows_of(folder: Path) -> list[dict]:
    (path,) = folder.glob("*.json")
    return json.loads(path.read_text())["rows"]


def test_profile_joins_ncu_metrics_to_timed_rows(ncu, tmp_path):
    out = tmp_path / "res"
    result = profile("reduce", "-s", "64x129", "-v", "float4", "-v", "shuffle", "--ncu", ncu, "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert [r["variant"] for r in rows] == ["float4", "shuffle", "cupy"]
    for row in rows:
        assert row["status"] == "OK" and row["time_us"] > 0  # timed by cudabench as well
        assert row["ncu"]["duration_us"] > 0 and row["ncu"]["bound"] == "memory"
    assert [r["ncu"]["kernels"] for r in rows] == [1, 1, 2]  # the baseline makes two
    assert not rows[0]["notes"]
    assert len(list(out.glob("*.ncu-rep"))) == 1 and len(list(out.glob("*.csv"))) == 1
    csv_text = next(out.glob("*.csv")).read_text()
    assert "ncu_duration_us" in csv_text.splitlines()[0]
    assert "ncu µs" in result.stdout and "--clock-control none" in result.stderr


def test_no_time_takes_the_profiled_rows(ncu, tmp_path):
    result = profile("reduce", "-s", "3x5", "-v", "atomic", "--no-time", "--ncu", ncu, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    rows = rows_of(tmp_path)
    assert all(r["method"] == "ncu" and r["time_us"] is None for r in rows)
    assert all(r["ncu"]["kernels"] >= 1 for r in rows)


def test_a_failing_variant_is_a_row_and_exit_1(ncu, tmp_path, kernel_dir):
    from conftest import write_kernel

    write_kernel(kernel_dir, "mine", "")  # the fake backend has no such kernel: COMPILE_ERROR
    result = profile(
        "reduce",
        "-s",
        "8x64",
        "-v",
        "mine",
        "-v",
        "float4",
        "--kernels",
        str(kernel_dir),
        "--ncu",
        ncu,
        "-o",
        str(tmp_path / "r"),
    )
    assert result.exit_code == 1, result.output
    rows = {r["variant"]: r for r in rows_of(tmp_path / "r")}
    assert rows["mine"]["status"] == "COMPILE_ERROR" and rows["mine"]["ncu"] is None
    assert rows["float4"]["status"] == "OK" and rows["float4"]["ncu"]["kernels"] == 1
    assert "mine: COMPILE_ERROR" in result.stderr


def test_ncu_refusing_gives_its_message_and_exit_1(ncu, tmp_path):
    result = profile("reduce", "-s", "3x5", "--ncu", ncu, "-o", str(tmp_path), mode="refuse")
    assert result.exit_code == 1
    assert "ERR_NVGPUCTRPERM" in result.stderr and "Traceback" not in result.output


def test_nothing_profiled_is_an_error(ncu, tmp_path):
    result = profile("reduce", "-s", "3x5", "--ncu", ncu, "-o", str(tmp_path), mode="none")
    assert result.exit_code == 1
    assert "No kernels were profiled" in result.stderr


def test_missing_ncu_is_one_line_and_exit_2(tmp_path):
    result = profile("reduce", "-s", "3x5", "--ncu", str(tmp_path / "nope"))
    assert result.exit_code == 2 and "--ncu" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_print_command(tmp_path):
    result = profile(
        "reduce",
        "-s",
        "442368x128",
        "-v",
        "float4",
        "--set",
        "full",
        "--section",
        "SpeedOfLight",
        "--metrics",
        "l1tex__t_bytes.sum",
        "--ncu",
        sys.executable,
        "--print-command",
        "-o",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    text = result.stdout.replace("\n", " ")
    assert text.count("--nvtx-include") == 2  # float4 and the cupy baseline
    for part in (
        "cudabench@reduce/float4\\[BLOCK=256,",
        "/442368x128/",
        "--clock-control none",
        "--cache-control all",
        "--set full",
        "--section SpeedOfLight",
        "l1tex__t_bytes.sum",
        "-m cudabench.profiled",
        "request.pickle",
        ".ncu-rep",
    ):
        assert part in text
    assert not list(tmp_path.glob("*.json"))  # nothing was run


def test_compare_diffs_ncu_metrics_of_two_profiled_runs(ncu, tmp_path):
    for name in ("a", "b"):
        result = profile("reduce", "-s", "64x129", "-v", "float4", "--ncu", ncu, "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    (a,), (b,) = (tmp_path / "a").glob("*.json"), (tmp_path / "b").glob("*.json")
    env = {"COLUMNS": "250"}
    shown = runner.invoke(app, ["compare", str(a), str(b)], env=env)
    assert shown.exit_code == 0, shown.output
    assert "ncu A µs" in shown.stdout and "DRAM % A→B" in shown.stdout
    as_json = runner.invoke(app, ["compare", str(a), str(b), "--json"])
    pairs = json.loads(as_json.stdout)
    assert all(p["a_ncu"]["duration_us"] > 0 and p["b_ncu"]["kernels"] >= 1 for p in pairs)
    plain = tmp_path / "plain.json"
    ran = runner.invoke(
        app,
        ["run", "reduce", "-s", "64x129", "-v", "float4", "--cold", *QUICK, "-o", str(plain)],
        env={"CUDABENCH_BACKEND": "fake"},
    )
    assert ran.exit_code == 0, ran.output
    mixed = runner.invoke(app, ["compare", str(plain), str(b)], env=env)
    assert mixed.exit_code == 0 and "ncu A µs" not in mixed.stdout  # only one run profiled


def test_a_config_of_several_ops_profiles_each_op_at_its_own_shapes(ncu, tmp_path):
    """The profiled child runs the config as it is: each op keeps its shapes (it was given
    every op's shapes as --shape, and a matrix shape sent to reduce stopped it)."""
    config = tmp_path / "two.yaml"
    config.write_text(
        "benchmarks:\n  - {op: reduce, shapes: [2^10], variants: [float4]}\n"
        "  - {op: sgemm, shapes: [64x64x64], variants: [smem]}\n"
    )
    out = tmp_path / "res"
    result = profile(str(config), "--ncu", ncu, "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert {(r["op"], r["shape"]) for r in rows} == {("reduce", "1024"), ("sgemm", "64x64x64")}
    assert all(r["ncu"] and r["ncu"]["duration_us"] > 0 for r in rows if r["status"] == "OK")


def test_a_cold_row_whose_launch_hit_l2_heavily_gets_a_warning(ncu, tmp_path):
    """Cold: ncu is asked for the L2 read lookups, each row gets its hit rate (`L2 hit %`),
    and a launch that hit more than half its read sectors a note asking whether the flush
    worked. The run still passes: a kernel may reread its data."""
    out = tmp_path / "cold"
    result = profile(
        "reduce",
        "-s",
        "64x129",
        "-v",
        "float4",
        "-v",
        "shuffle",
        "--ncu",
        ncu,
        "-o",
        str(out),
        l2_hit="float4=80",
        columns="250",
    )
    assert result.exit_code == 0, result.output
    rows = {r["variant"]: r for r in rows_of(out)}
    assert rows["float4"]["ncu"]["l2_hit_pct"] == pytest.approx(80.0)
    assert (
        "the cold launch hit L2 on 80% of its read sectors: was the flush effective?"
        in (rows["float4"]["notes"])
    )
    assert rows["shuffle"]["ncu"]["l2_hit_pct"] == pytest.approx(3.0)
    assert "flush" not in rows["shuffle"]["notes"] and "flush" not in rows["cupy"]["notes"]
    assert "L2 hit %" in result.stdout and "80 ⚠" in result.stdout
    assert "float4" in result.stderr and "80% of its read sectors: was the flush effective?" in (
        " ".join(result.stderr.split())
    )  # the whole note, below the table
    assert "ncu_l2_hit_pct" in next(out.glob("*.csv")).read_text().splitlines()[0]


def test_a_hot_profile_asks_no_l2_hit_rate(ncu, tmp_path):
    out = tmp_path / "hot"
    result = profile(
        "reduce",
        "-s",
        "64x129",
        "-v",
        "float4",
        "--hot",
        "--ncu",
        ncu,
        "-o",
        str(out),
        l2_hit="float4=80",
        columns="250",
    )
    assert result.exit_code == 0, result.output
    rows = rows_of(out)
    assert all(r["ncu"]["l2_hit_pct"] is None and "flush" not in r["notes"] for r in rows)
    assert "L2 hit %" not in result.stdout
