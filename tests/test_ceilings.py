"""The card's practical ceilings (cudabench/ceilings.py, `cudabench ceilings`, the `% ceiling`
column) without a GPU: the interpolation, the file and its keys, the rows a measurement
picks, and the commands through the fake backend (its L2 made small, so the arrays of 8x it
are too; its numbers are plumbing, not measurements)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import fake_session
from typer.testing import CliRunner

from cudabench import ceilings
from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.spec import Ceilings, ResultRow, Status

C = Ceilings(gpu=FAKE_DEVICE.name, driver=FAKE_DEVICE.driver_version, memory_clock_mhz=3201.0,
             measured="2026-11-23T16:00:00+00:00", read_gbps=4000.0, write_gbps=4400.0,
             copy_gbps=3600.0, triad_gbps=3800.0, fma_gflops=50_000.0, floor_us=2.0)  # fmt: skip
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
runner = CliRunner()


def row(op, shape, gbps=None, gflops=None, status=Status.OK, variant="v", baseline=False,
        bytes_moved=None, **kw):  # fmt: skip
    from cudabench.ops import get_op

    dims = tuple(int(d) for d in shape.split("x"))
    return ResultRow(op=op, shape=shape, dtype="float32", variant=variant, status=status,
                     gbps=gbps, gflops=gflops, is_baseline=baseline,
                     bytes_moved=bytes_moved or get_op(op).bytes_moved(dims), **kw)  # fmt: skip


def test_a_mix_between_two_measured_ones_is_interpolated_by_its_read_fraction():
    assert ceilings.gbps_at(C, 0.0) == 4400.0 and ceilings.gbps_at(C, 1.0) == 4000.0
    assert ceilings.gbps_at(C, 0.5) == 3600.0 and ceilings.gbps_at(C, 2 / 3) == pytest.approx(3800.0)
    assert ceilings.gbps_at(C, 0.25) == pytest.approx(4000.0)  # halfway from write to copy
    assert ceilings.gbps_at(C, 5 / 6) == pytest.approx(3900.0)  # halfway from triad to read
    assert ceilings.gbps_at(C, -1) == 4400.0 and ceilings.gbps_at(C, 2) == 4000.0


def test_each_row_is_measured_against_its_own_mix():
    # a row sum reads 128 of every 129 bytes; a softmax reads half; add two thirds
    reduce = ceilings.pct_ceiling(row("reduce", "442368x128", gbps=3000.0), C)
    expected = ceilings.gbps_at(C, 128 / 129)
    assert reduce == pytest.approx(100 * 3000 / expected)
    softmax = row("softmax", "442368x128", gbps=3000.0)
    assert ceilings.pct_ceiling(softmax, C) == pytest.approx(100 * 3000 / 3600)
    assert ceilings.pct_ceiling(row("add", "1048576", gbps=3800.0), C) == pytest.approx(100.0)
    assert ceilings.pct_ceiling(row("sgemm", "64x64x64", gflops=40_000.0), C) == pytest.approx(80.0)
    assert ceilings.pct_ceiling(row("reduce", "1024", gbps=10.0, status=Status.FAIL), C) is None
    assert ceilings.pct_ceiling(row("reduce", "1024", gbps=10.0), None) is None
    no_fma = dataclasses.replace(C, fma_gflops=None)
    assert ceilings.pct_ceiling(row("sgemm", "64x64x64", gflops=1.0), no_fma) is None


def test_the_ceilings_are_the_best_correct_rows_of_each_mix():
    rows = [
        row("stream_read", "1000", gbps=3500.0, variant="vec4", params="UNROLL=1"),
        row("stream_read", "1000", gbps=3900.0, variant="vec4", params="UNROLL=4"),
        row("stream_read", "1000", gbps=3950.0, variant="cupy", baseline=True),
        row("stream_read", "1000", gbps=9999.0, variant="vec4", status=Status.FAIL),
        row("stream_write", "1000", gbps=4300.0, variant="vec4"),
        row("stream_copy", "1000", gbps=3500.0, variant="vec4"),
        row("stream_copy", "1000", gbps=3550.0, variant="memcpy", baseline=True),
        row("stream_triad", "1000", gbps=3700.0, variant="vec4", floor_us=2.5),
        row("fma", "1000", gflops=51_000.0, variant="chain", params="BLOCK=1024"),
    ]
    c = ceilings.from_rows(rows, FAKE_DEVICE, "now", "r.json")
    assert (c.read_gbps, c.write_gbps, c.copy_gbps, c.triad_gbps) == (3950.0, 4300.0, 3550.0, 3700.0)
    assert c.fma_gflops == 51_000.0 and c.floor_us == 2.5 and c.source == "r.json"
    assert "read: stream_read cupy" in c.by and "fma: fma chain[BLOCK=1024]" in c.by
    with pytest.raises(ceilings.CeilingsError, match="no correct row of stream_copy"):
        ceilings.from_rows([r for r in rows if r.op != "stream_copy"], FAKE_DEVICE, "now")


def test_the_file_keeps_one_entry_a_gpu_driver_and_memory_clock(tmp_path):
    path = tmp_path / "c.json"
    assert ceilings.load(path) == []
    ceilings.save(C, path)
    ceilings.save(dataclasses.replace(C, driver="999.0", read_gbps=1.0), path)
    ceilings.save(dataclasses.replace(C, read_gbps=4100.0), path)  # replaces the first
    entries = ceilings.load(path)
    assert len(entries) == 2
    assert ceilings.lookup(entries, FAKE_DEVICE).read_gbps == 4100.0
    clocked = dataclasses.replace(FAKE_DEVICE, memory_clock_mhz=2619.0)
    assert ceilings.lookup(entries, clocked) is None
    assert "at 3201 MHz memory; now driver 0.0 at 2619 MHz" in ceilings.stale(entries, clocked)
    assert ceilings.stale(entries, FAKE_DEVICE) == ""
    other = dataclasses.replace(FAKE_DEVICE, name="Another GPU")
    assert ceilings.stale(entries, other) == "" and ceilings.lookup(entries, other) is None


@pytest.mark.parametrize("text, message", [
    ("not json", "c.json: Expecting value"),
    ('{"ceilings": 3}', "expected"),
    ('{"ceilings": [{"gpu": "x"}]}', "ceilings\\[0\\]"),
])
def test_a_bad_file_is_one_line(tmp_path, text, message):
    (tmp_path / "c.json").write_text(text)
    with pytest.raises(ceilings.CeilingsError, match=message) as caught:
        ceilings.load(tmp_path / "c.json")
    assert "\n" not in str(caught.value)


def test_the_arrays_are_eight_times_the_l2_or_more():
    assert ceilings.array_elements(FAKE_DEVICE) == 8 * FAKE_DEVICE.l2_bytes // 4
    assert ceilings.array_elements(FAKE_DEVICE, 10**9) == 10**9
    with pytest.raises(ceilings.CeilingsError, match="--size 1000: the arrays must hold at least"):
        ceilings.array_elements(FAKE_DEVICE, 1000)


# ------------------------------------------------------------------ the commands


@pytest.fixture
def fake_env(tmp_path):
    return {"CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_L2": "65536",
            "CUDABENCH_CEILINGS": str(tmp_path / "ceilings.json")}


def test_ceilings_measures_keeps_and_then_shows_what_it_kept(tmp_path, fake_env):
    result = runner.invoke(app, ["ceilings", *QUICK, "-o", str(tmp_path / "m")], env=fake_env)
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    for mix in ("read", "write", "copy", "triad", "fma", "launch floor"):
        assert f"│ {mix} " in text
    assert "memcpy" in text and "memset" in text and "cupy" in text  # the references beside
    (entry,) = ceilings.load(tmp_path / "ceilings.json")
    assert entry.gpu == FAKE_DEVICE.name and entry.read_gbps > 0 and entry.fma_gflops > 0
    (rows_file,) = (tmp_path / "m").glob("*_ceilings.json")
    doc = json.loads(rows_file.read_text())
    assert {r["op"] for r in doc["rows"]} == {"stream_read", "stream_write", "stream_copy",
                                              "stream_triad", "fma"}  # fmt: skip
    params = [(r["variant"], dict(p.split("=") for p in r["params"].split(",") if p))
              for r in doc["rows"] if r["op"] == "stream_copy"]  # fmt: skip
    copies = {(v, p.get("UNROLL"), p.get("GRID_K"), p.get("STREAM_LOADS")) for v, p in params}
    assert copies == {("vec4", u, k, None) for u in "148" for k in "04"} | {
        ("tile", u, None, s) for u in "12" for s in "01"} | {
        ("bulk", None, "2", None),  # at its defaults: the ceilings' grids do not name it
        ("memcpy", None, None, None)}
    assert len(copies) == len(params)  # every layout, each configuration of its grid once
    assert doc["meta"]["ceilings"]["read_gbps"] == entry.read_gbps
    again = runner.invoke(app, ["ceilings"], env=fake_env)
    assert again.exit_code == 0 and "kept from" in " ".join(again.stdout.split())
    assert len(list((tmp_path / "m").glob("*.json"))) == 1  # nothing measured the second time


@pytest.mark.parametrize("args, message", [
    (["--size", "1000"], "--size 1000: the arrays must hold at least"),
    (["--devices", "0,1"], "give one GPU index"),
])
def test_bad_input_to_ceilings_is_one_line_and_exit_2(tmp_path, fake_env, args, message):
    result = runner.invoke(app, ["ceilings", *args, *QUICK], env=fake_env)
    assert result.exit_code == 2 and message in result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_a_bad_ceilings_file_or_none_at_all_is_one_line(tmp_path, fake_env):
    (tmp_path / "ceilings.json").write_text("{")
    result = runner.invoke(app, ["ceilings"], env=fake_env)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    off = runner.invoke(app, ["ceilings"], env={**fake_env, "CUDABENCH_CEILINGS": "off"})
    assert off.exit_code == 2 and "CUDABENCH_CEILINGS is off" in off.output


def test_run_gains_a_ceiling_column_from_the_kept_ceilings(tmp_path, fake_env):
    ceilings.save(C, tmp_path / "ceilings.json")
    result = runner.invoke(app, ["run", "reduce", "-s", "2^16", "-v", "float4", *QUICK,
                                 "-o", str(tmp_path / "r")], env=fake_env)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "% ceiling" in result.stdout and "ceilings from" in result.output
    (path,) = (tmp_path / "r").glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["meta"]["ceilings"]["copy_gbps"] == 3600.0
    for r in doc["rows"]:
        assert r["pct_ceiling"] == pytest.approx(100 * r["gbps"] / ceilings.gbps_at(C, 65536 / 65537))
    plain = runner.invoke(app, ["run", "reduce", "-s", "2^16", "-v", "float4", "--no-ceilings",
                                *QUICK, "-o", str(tmp_path / "p")], env=fake_env)  # fmt: skip
    assert plain.exit_code == 0 and "% ceiling" not in plain.stdout


def test_a_first_run_on_a_gpu_measures_its_ceilings(tmp_path, fake_env):
    result = runner.invoke(app, ["run", "add", "-s", "2^12", "-v", "float4", *QUICK,
                                 "-o", str(tmp_path / "r")], env=fake_env)  # fmt: skip
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "measuring this GPU's ceilings first (none kept for the Fake GPU" in text
    assert "% ceiling" in result.stdout
    assert list((tmp_path / "r").glob("*_ceilings.json")) and ceilings.load(tmp_path / "ceilings.json")


def test_a_roofline_of_a_run_with_its_ceilings(tmp_path, fake_env):
    from cudabench.plots import roofline_points

    ceilings.save(C, tmp_path / "ceilings.json")
    for op, shape in (("reduce", "2^16"), ("transpose", "64x48")):
        result = runner.invoke(app, ["run", op, "-s", shape, *QUICK, "-o", str(tmp_path / op)],
                               env=fake_env)  # fmt: skip
        assert result.exit_code == 0, result.output
    (reduce_run,) = (tmp_path / "reduce").glob("*.json")
    png = tmp_path / "roof.png"
    shown = runner.invoke(app, ["report", str(reduce_run), "--roofline", str(png)], env=fake_env)
    assert shown.exit_code == 0, shown.output
    assert png.stat().st_size > 10_000 and "roofline:" in shown.output
    from cudabench.results import read_results

    meta, rows = read_results(reduce_run)
    points, none = roofline_points(rows)
    assert len(points) == len(rows) and not none and meta.ceilings == C
    (r, intensity, gflops), *_ = points  # a sum: one add per 4-byte element read
    assert intensity == pytest.approx(65536 / r.bytes_moved)
    assert gflops == pytest.approx(65536 / (r.time_us * 1e-6) / 1e9)
    (transpose_run,) = (tmp_path / "transpose").glob("*.json")
    nothing = runner.invoke(app, ["report", str(transpose_run), "--roofline", str(png)], env=fake_env)
    assert nothing.exit_code == 2 and "no correct, timed row of an op that does arithmetic" in nothing.output


def test_the_fma_check_catches_one_fma_too_few():
    import numpy as np

    from cudabench.backends.fake import FakeBackend
    from cudabench.kernels import BUILTIN_KERNELS, discover
    from cudabench.runner import CaseJob, Runner
    from cudabench.spec import Case, TimingOptions

    def short(grid, block, x, out, n, iters, one, step):
        out[...] = x + np.float32((int(iters) - 1) * float(step))

    (chain,) = discover("fma", [BUILTIN_KERNELS])[0]
    once = TimingOptions(warmup=0, min_samples=1, min_time_s=0.0, max_time_s=0.0)
    (row,) = Runner(FakeBackend(kernels={"fma_chain": short})).run_job(
        CaseJob(Case("fma", (4099,)), (chain,), (), once))
    assert row.status is Status.FAIL and "4099 of 4099 outputs wrong" in row.error


def test_the_python_api_has_the_column_too(tmp_path, fake_env, monkeypatch):
    import cudabench

    for name, value in fake_env.items():
        monkeypatch.setenv(name, value)
    ceilings.save(C, tmp_path / "ceilings.json")
    df = cudabench.run("reduce", shapes=["2^12"], variants=["float4"], output=tmp_path / "r",
                       min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)  # fmt: skip
    assert df["pct_ceiling"].notna().all()
    off = cudabench.run("reduce", shapes=["2^12"], variants=["float4"], output=tmp_path / "o",
                        ceilings=False, min_samples=2, min_time_s=0.0, max_time_s=0.01, warmup=0)  # fmt: skip
    assert off["pct_ceiling"].isna().all()


def test_the_history_database_keeps_them_too(tmp_path, fake_env):
    """A run records the ceilings it used; with the file gone, the next run takes them from
    the database (and keeps them in the file again) instead of measuring."""
    ceilings.save(C, tmp_path / "ceilings.json")
    args = ["run", "reduce", "-s", "2^12", "-v", "float4", *QUICK]
    first = runner.invoke(app, [*args, "-o", str(tmp_path / "a")], env=fake_env)
    assert first.exit_code == 0, first.output
    (tmp_path / "ceilings.json").unlink()
    second = runner.invoke(app, [*args, "-o", str(tmp_path / "b")], env=fake_env)
    assert second.exit_code == 0, second.output
    text = " ".join(second.output.split())
    assert "ceilings from the history database" in text and "measuring" not in text
    assert ceilings.load(tmp_path / "ceilings.json") == [C]
    assert not list((tmp_path / "b").glob("*_ceilings.json"))


def test_a_measurement_that_leaves_a_mix_without_a_correct_row_is_a_note(tmp_path, monkeypatch):
    """No correct copy (the kernel does not load, the memcpy reference is made wrong): the run
    gets no column and a note saying why, and nothing is kept as this GPU's ceilings."""
    from cudabench.backends.fake import FakeBackend
    from cudabench.calibration import use_ceilings
    from cudabench.compile import CompileError
    from cudabench.ops import get_op
    from cudabench.spec import TimingOptions

    class NoCopyKernel(FakeBackend):
        def load(self, variant, dtype="float32"):
            if variant.op == "stream_copy":
                raise CompileError(f"{variant.path}: planted")
            return super().load(variant, dtype)

    monkeypatch.setenv("CUDABENCH_CEILINGS", str(tmp_path / "c.json"))
    monkeypatch.setenv("CUDABENCH_FAKE_L2", "65536")
    monkeypatch.setattr(get_op("stream_copy"), "library", {"memcpy": lambda a, b: a * 0})
    backend = NoCopyKernel()
    quick = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)
    session = fake_session(backend)
    meta = session.new_sweep("t", quick, "test", output=tmp_path / "m",
                             started="2026-11-23T17:00:00+00:00").meta
    used = use_ceilings(session, meta, output=tmp_path / "m")
    assert used.ceilings is None
    assert used.notes[-1].startswith("% ceiling: not measured: no correct row of stream_copy")
    assert not (tmp_path / "c.json").exists() and list((tmp_path / "m").glob("*_ceilings.json"))
