"""The card's practical ceilings (cudabench/record/ceilings.py, `cudabench ceilings`, the `% ceiling`
column) without a GPU: the interpolation, the file and its keys, the rows a measurement
picks, and the commands through the fake backend (its L2 made small, so the arrays of 8x it
are too; its numbers are plumbing, not measurements)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import fake_session
from typer.testing import CliRunner

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.cli import app
from cudabench.core.records import Ceilings, ResultRow, Status
from cudabench.record import ceilings

C = Ceilings(
    gpu=FAKE_DEVICE.name,
    driver=FAKE_DEVICE.driver_version,
    memory_clock_mhz=3201.0,
    measured="2026-11-23T16:00:00+00:00",
    read_gbps=4000.0,
    write_gbps=4400.0,
    copy_gbps=3600.0,
    triad_gbps=3800.0,
    fma_gflops=50_000.0,
    floor_us=2.0,
)
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
runner = CliRunner()


def row(
    op,
    shape,
    gbps=None,
    gflops=None,
    status=Status.OK,
    variant="v",
    baseline=False,
    bytes_moved=None,
    dtype="float32",
    **kw,
):
    from cudabench.core.dtypes import get_dtype
    from cudabench.ops.registry import get_op

    dims = tuple(int(d) for d in shape.split("x"))
    moved = bytes_moved or get_op(op).bytes_moved(dims, get_dtype(dtype).itemsize)
    return ResultRow(
        op=op,
        shape=shape,
        dtype=dtype,
        variant=variant,
        status=status,
        gbps=gbps,
        gflops=gflops,
        is_baseline=baseline,
        bytes_moved=moved,
        **kw,
    )


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


N = str(ceilings.array_elements(FAKE_DEVICE))  # the calibration size: 8x the fake's 60 MiB L2


def measurement(*more):
    """A measurement's rows at the calibration size (and `more`)."""
    return [
        row("stream_read", N, gbps=3500.0, variant="vec4", params="UNROLL=1", spread=0.004),
        row("stream_read", N, gbps=3900.0, variant="vec4", params="UNROLL=4", spread=0.002),
        row("stream_read", N, gbps=9999.0, variant="vec4", status=Status.FAIL),
        row("stream_write", N, gbps=4300.0, variant="vec4", spread=0.003),
        row("stream_copy", N, gbps=3500.0, variant="vec4"),
        row("stream_copy", N, gbps=3550.0, variant="memcpy", baseline=True, spread=0.001),
        row("stream_triad", N, gbps=3700.0, variant="vec4", floor_us=2.5, spread=0.005),
        row("fma", "1000", gflops=51_000.0, variant="chain", params="BLOCK=1024"),
        *more,
    ]


def test_the_ceilings_are_the_best_correct_rows_of_each_mix():
    rows = measurement(row("stream_read", N, gbps=3950.0, variant="cupy", baseline=True))
    c = ceilings.from_rows(rows, FAKE_DEVICE, "now", "r.json")
    assert (c.read_gbps, c.write_gbps, c.copy_gbps, c.triad_gbps) == (3950.0, 4300.0, 3550.0, 3700.0)
    assert c.fma_gflops == 51_000.0 and c.floor_us == 2.5 and c.source == "r.json"
    assert "read: stream_read cupy" in c.by and "fma: fma chain[BLOCK=1024]" in c.by
    # the spread of the row that set each ceiling (the cupy row's unknown)
    assert (c.read_spread, c.write_spread, c.copy_spread, c.triad_spread) == (None, 0.003, 0.001, 0.005)
    with pytest.raises(ceilings.CeilingsError, match="no correct row of stream_copy"):
        ceilings.from_rows([r for r in rows if r.op != "stream_copy"], FAKE_DEVICE, "now")


def test_a_library_row_faster_than_the_stream_kernels_raises_the_ceiling():
    """Issue 35: CUB's and torch's sums read faster than the stream kernels; the read ceiling
    is theirs, and `by` says so."""
    torch_sum = row("reduce", N, gbps=4010.0, variant="torch", baseline=True, spread=0.003)
    c = ceilings.from_rows(measurement(torch_sum), FAKE_DEVICE, "now")
    assert c.read_gbps == 4010.0 and c.read_spread == 0.003
    assert f"read: reduce torch {N} float32" in c.by
    slower = dataclasses.replace(torch_sum, gbps=3800.0)
    c = ceilings.from_rows(measurement(slower), FAKE_DEVICE, "now")
    assert c.read_gbps == 3900.0 and "read: stream_read vec4[UNROLL=4]" in c.by


def test_a_catalogue_row_of_exactly_the_mix_at_the_calibration_size_raises_it():
    """Any row that moves exactly a mix over arrays of at least 8x the L2 counts for that
    mix, a kernel as much as a library; a smaller array, or another mix, does not."""
    big = str(4 * int(N))
    add = row("add", big, gbps=3760.0, variant="float4")  # two reads, one write: a triad
    c = ceilings.from_rows(measurement(add), FAKE_DEVICE, "now")
    assert c.triad_gbps == 3760.0 and f"triad: add float4 {big} float32" in c.by
    small = row("add", str(int(N) // 2), gbps=9000.0, variant="float4")  # the L2 helps it
    row_sums = row("reduce", f"{int(N) // 128}x128", gbps=9000.0, variant="float4")  # 128/129 read
    softmax = row("softmax", f"{int(N) // 128}x128", gbps=9000.0, variant="v")  # copy's mix...
    relu = row("relu", N, gbps=3560.0, variant="cupy", baseline=True)  # ... as relu's
    c = ceilings.from_rows(measurement(small, row_sums, relu), FAKE_DEVICE, "now")
    assert (c.read_gbps, c.triad_gbps, c.copy_gbps) == (3900.0, 3700.0, 3560.0)
    assert ceilings.mix_of(softmax, FAKE_DEVICE) == "copy"
    assert ceilings.mix_of(row_sums, FAKE_DEVICE) is None and ceilings.mix_of(small, FAKE_DEVICE) is None
    # the size is in bytes: a bfloat16 sum needs twice the elements of a float32 one
    half = row("reduce", N, gbps=9000.0, variant="torch", baseline=True, dtype="bfloat16")
    double = row("reduce", str(2 * int(N)), gbps=9000.0, variant="torch", baseline=True, dtype="bfloat16")
    assert half.bytes_moved == 2 * int(N) + 2 and double.bytes_moved == 4 * int(N) + 2
    assert ceilings.mix_of(half, FAKE_DEVICE) is None and ceilings.mix_of(double, FAKE_DEVICE) == "read"
    failed = dataclasses.replace(add, gbps=9000.0, status=Status.FAIL)
    assert ceilings.from_rows(measurement(failed), FAKE_DEVICE, "now").triad_gbps == 3700.0


def test_the_ceilings_table_names_the_rows_of_another_op_that_set_or_beat_a_mix():
    from rich.console import Console

    from cudabench.present.tables import ceilings_table

    torch_sum = row("reduce", N, gbps=4010.0, variant="torch", baseline=True)
    relu = row("relu", N, gbps=3540.0, variant="cupy", baseline=True)  # under memcpy's 3550
    rows = measurement(torch_sum, relu, row("stream_copy", N, gbps=3530.0, variant="cupy", baseline=True))
    c = ceilings.from_rows(rows, FAKE_DEVICE, "now")
    console = Console(width=250, record=True)
    console.print(ceilings_table(c, FAKE_DEVICE, rows))
    lines = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│" in line}
    assert f"reduce torch {N} float32" in lines["read"]  # set by, and the best reference
    assert "reduce torch" in lines["read"].split(f"{N} float32")[1]
    assert "memcpy" in lines["copy"] and "relu" not in lines["copy"]


SPREADS = dataclasses.replace(C, read_spread=0.02, copy_spread=0.005, triad_spread=None)


def test_a_row_above_its_ceiling_by_more_than_the_ceilings_spread_gets_a_note():
    over = row("reduce", str(2**30), gbps=4000.0 * 1.021)  # a 4 GiB sum, far above the L2
    noted = ceilings.annotate(over, SPREADS, FAKE_DEVICE)
    assert noted.pct_ceiling == pytest.approx(102.1, abs=0.01)
    assert noted.notes.startswith(
        "above the measured read ceiling (4,000 GB/s) by 2.1%, more "
        "than its spread (2.0%): `cudabench ceilings --recalibrate`"
    )
    assert ceilings.flagged(noted)
    again = ceilings.annotate(noted, SPREADS, FAKE_DEVICE)  # the sweep annotates more than once
    assert again.notes == noted.notes
    cached = dataclasses.replace(over, notes="GPU throttled (power cap)")  # notes are joined
    joined = ceilings.annotate(cached, SPREADS, FAKE_DEVICE).notes
    assert joined.startswith("GPU throttled (power cap); above")
    # a copy (relu) against copy's spread of 0.5%
    relu = row("relu", str(2**30), gbps=3600.0 * 1.006)
    copy = ceilings.annotate(relu, SPREADS, FAKE_DEVICE).notes
    assert "above the measured copy ceiling (3,600 GB/s) by 0.6%" in copy
    # between two mixes: row sums (128/129 read) against the interpolated ceiling and spread
    ceiling = ceilings.gbps_at(SPREADS, 128 / 129)
    spread = ceilings.spread_at(SPREADS, 128 / 129)
    assert 0.01 < spread < 0.02  # mostly read's 2%, a little of triad's unknown (1%)
    row_sums = row("reduce", "2097152x128", gbps=ceiling * (1 + spread + 0.001))
    assert ceilings.annotate(row_sums, SPREADS, FAKE_DEVICE).notes.startswith(
        f"above the measured ceiling of its mix (between triad and read) ({ceiling:,.0f} GB/s)"
    )
    # an unknown spread is SPREAD_FLOOR (1%) wide: triad's, for add
    add = row("add", str(2**30), gbps=3800.0 * 1.012)
    assert ceilings.flagged(ceilings.annotate(add, SPREADS, FAKE_DEVICE))


def test_a_row_within_the_ceilings_spread_or_in_the_l2_is_not_flagged():
    within = row("reduce", str(2**30), gbps=4000.0 * 1.019)  # read's spread is 2%
    noted = ceilings.annotate(within, SPREADS, FAKE_DEVICE)
    assert noted.pct_ceiling == pytest.approx(101.9) and noted.notes == ""
    assert not ceilings.flagged(noted)
    add = row("add", str(2**30), gbps=3800.0 * 1.009)  # triad's unknown spread: the 1% floor
    assert ceilings.annotate(add, SPREADS, FAKE_DEVICE).notes == ""
    in_l2 = row("reduce", "65536", gbps=40_000.0)  # the runner says it is cached
    assert ceilings.annotate(in_l2, SPREADS, FAKE_DEVICE).notes == ""
    sgemm = row("sgemm", "1024x1024x1024", gflops=60_000.0, gbps=50_000.0)  # against the FMA rate
    assert ceilings.annotate(sgemm, SPREADS, FAKE_DEVICE).notes == ""
    # a row sum (128 of 129 bytes read) just under the interpolated ceiling
    row_sums = row("reduce", "2097152x128", gbps=ceilings.gbps_at(SPREADS, 128 / 129))
    assert ceilings.annotate(row_sums, SPREADS, FAKE_DEVICE).notes == ""


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


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "c.json: Expecting value"),
        ('{"ceilings": 3}', "expected"),
        ('{"ceilings": [{"gpu": "x"}]}', "ceilings\\[0\\]"),
    ],
)
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
    return {
        "CUDABENCH_BACKEND": "fake",
        "CUDABENCH_FAKE_L2": "65536",
        "CUDABENCH_CEILINGS": str(tmp_path / "ceilings.json"),
    }


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
    assert {r["op"] for r in doc["rows"]} == {
        "stream_read",
        "stream_write",
        "stream_copy",
        "stream_triad",
        "fma",
        "reduce",
        "add",
        "relu",
    }
    # the ops that move a mix run their library references alone, at the stream ops' size
    others = [
        (r["op"], r["variant"], r["shape"])
        for r in doc["rows"]
        if r["op"] in ceilings.MIX_REFERENCES.values()
    ]
    n = str(ceilings.array_elements(dataclasses.replace(FAKE_DEVICE, l2_bytes=65536)))
    assert sorted(others) == [("add", "cupy", n), ("reduce", "cupy", n), ("relu", "cupy", n)]
    params = [
        (r["variant"], dict(p.split("=") for p in r["params"].split(",") if p))
        for r in doc["rows"]
        if r["op"] == "stream_copy"
    ]
    copies = {(v, p.get("UNROLL"), p.get("GRID_K"), p.get("STREAM_LOADS")) for v, p in params}
    assert copies == {("vec4", u, k, None) for u in "148" for k in "04"} | {
        ("tile", u, None, s) for u in "12" for s in "01"
    } | {
        ("bulk", None, "2", None),  # at its defaults: the ceilings' grids do not name it
        ("memcpy", None, None, None),
    }
    assert len(copies) == len(params)  # every layout, each configuration of its grid once
    assert doc["meta"]["ceilings"]["read_gbps"] == entry.read_gbps
    again = runner.invoke(app, ["ceilings"], env=fake_env)
    assert again.exit_code == 0 and "kept from" in " ".join(again.stdout.split())
    assert len(list((tmp_path / "m").glob("*.json"))) == 1  # nothing measured the second time


@pytest.mark.parametrize(
    "args, message",
    [
        (["--size", "1000"], "--size 1000: the arrays must hold at least"),
        (["--devices", "0,1"], "give one GPU index"),
    ],
)
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
    result = runner.invoke(
        app, ["run", "reduce", "-s", "2^16", "-v", "float4", *QUICK, "-o", str(tmp_path / "r")], env=fake_env
    )
    assert result.exit_code == 0, result.output
    assert "% ceiling" in result.stdout and "ceilings from" in result.output
    (path,) = (tmp_path / "r").glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["meta"]["ceilings"]["copy_gbps"] == 3600.0
    for r in doc["rows"]:
        assert r["pct_ceiling"] == pytest.approx(100 * r["gbps"] / ceilings.gbps_at(C, 65536 / 65537))
    plain = runner.invoke(
        app,
        ["run", "reduce", "-s", "2^16", "-v", "float4", "--no-ceilings", *QUICK, "-o", str(tmp_path / "p")],
        env=fake_env,
    )
    assert plain.exit_code == 0 and "% ceiling" not in plain.stdout


def test_rows_above_their_ceiling_are_noted_and_the_run_asks_once_to_recalibrate(tmp_path, fake_env):
    """Kept ceilings the fake's sums beat (read 1 GB/s): every row of the read mix is noted,
    and the run's notes (its JSON, its stderr) ask for a recalibration once."""
    low = dataclasses.replace(C, read_gbps=1.0, read_spread=0.001)
    ceilings.save(low, tmp_path / "ceilings.json")
    args = ["run", "reduce", "-s", "2^16", "-s", "2^17", "-v", "float4", "-v", "atomic", *QUICK]
    # an L2 of 128 KiB: the sums are under the calibration size (2^18 floats), none raises it
    fake_env = {**fake_env, "CUDABENCH_FAKE_L2": "131072"}
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "r")], env=fake_env)
    assert result.exit_code == 0, result.output
    (path,) = (tmp_path / "r").glob("*.json")
    doc = json.loads(path.read_text())
    assert len(doc["rows"]) == 6  # two shapes: float4, atomic and the cupy baseline
    for r in doc["rows"]:
        assert r["pct_ceiling"] > 101 and r["notes"].count("above the measured read ceiling (1 GB/s)") == 1
    asks = [n for n in doc["meta"]["notes"] if "cudabench ceilings --recalibrate" in n]
    assert len(asks) == 1 and asks[0] == ceilings.recalibration_note(low)
    assert " ".join(result.output.split()).count("a ceiling a kernel beats is not a ceiling") == 1
    off = {**fake_env, "CUDABENCH_CEILINGS": "off"}
    plain = runner.invoke(app, [*args, "-o", str(tmp_path / "p")], env=off)
    assert plain.exit_code == 0 and "recalibrate" not in plain.output


def test_rows_under_their_ceiling_leave_the_run_without_the_request(tmp_path, monkeypatch):
    """The sweep itself (no CLI): ceilings the rows stay under add no note, ceilings they beat
    add the run's note once however many rows beat them."""
    from cudabench.execution.plan import plan

    # the sums are 2x and 4x the L2: under the calibration size (8x), so none raises a ceiling
    monkeypatch.setenv("CUDABENCH_FAKE_L2", "131072")

    work = plan(
        "reduce",
        [(65536,), (131072,)],
        ["float4"],
        None,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
    for kept, expected in ((C, 0), (dataclasses.replace(C, read_gbps=1.0), 1)):
        with fake_session() as session:
            sweep = session.new_sweep(
                "reduce", work.timing, "test", output=tmp_path / str(expected), ceilings=kept
            )
            sweep.run(work.jobs)
            sweep.finish()
        assert all(r.pct_ceiling is not None for r in sweep.rows)
        assert sum(ceilings.flagged(r) for r in sweep.rows) == 4 * expected
        assert sweep.meta.notes.count(ceilings.recalibration_note(kept)) == expected


def test_a_first_run_on_a_gpu_measures_its_ceilings(tmp_path, fake_env, monkeypatch):
    from cudabench.execution import calibration

    monkeypatch.setattr(calibration, "measures_fake_ceilings", lambda: True)  # the fake as a GPU
    result = runner.invoke(
        app, ["run", "add", "-s", "2^12", "-v", "float4", *QUICK, "-o", str(tmp_path / "r")], env=fake_env
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "measuring this GPU's ceilings first (none kept for the Fake GPU" in text
    assert "% ceiling" in result.stdout
    assert list((tmp_path / "r").glob("*_ceilings.json")) and ceilings.load(tmp_path / "ceilings.json")


def test_a_roofline_of_a_run_with_its_ceilings(tmp_path, fake_env):
    from cudabench.present.plots import roofline_points

    ceilings.save(C, tmp_path / "ceilings.json")
    for op, shape in (("reduce", "2^16"), ("transpose", "64x48")):
        result = runner.invoke(app, ["run", op, "-s", shape, *QUICK, "-o", str(tmp_path / op)], env=fake_env)
        assert result.exit_code == 0, result.output
    (reduce_run,) = (tmp_path / "reduce").glob("*.json")
    png = tmp_path / "roof.png"
    shown = runner.invoke(app, ["report", str(reduce_run), "--roofline", str(png)], env=fake_env)
    assert shown.exit_code == 0, shown.output
    assert png.stat().st_size > 10_000 and "roofline:" in shown.output
    from cudabench.record.results import read_results

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
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.core.records import Case
    from cudabench.core.timing import TimingOptions
    from cudabench.measure.runner import CaseJob, Runner
    from cudabench.ops.discovery import discover

    def short(grid, block, x, out, n, iters, one, step):
        out[...] = x + np.float32((int(iters) - 1) * float(step))

    (chain,) = discover("fma", [BUILTIN_KERNELS])[0]
    once = TimingOptions(warmup=0, min_samples=1, min_time_s=0.0, max_time_s=0.0)
    (row,) = Runner(FakeBackend(kernels={"fma_chain": short})).run_job(
        CaseJob(Case("fma", (4099,)), (chain,), (), once)
    )
    assert row.status is Status.FAIL and "4099 of 4099 outputs wrong" in row.error


def test_the_python_api_has_the_column_too(tmp_path, fake_env, monkeypatch):
    import cudabench

    for name, value in fake_env.items():
        monkeypatch.setenv(name, value)
    ceilings.save(C, tmp_path / "ceilings.json")
    df = cudabench.run(
        "reduce",
        shapes=["2^12"],
        variants=["float4"],
        output=tmp_path / "r",
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
    assert df["pct_ceiling"].notna().all()
    off = cudabench.run(
        "reduce",
        shapes=["2^12"],
        variants=["float4"],
        output=tmp_path / "o",
        ceilings=False,
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
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
    from cudabench.build.nvcc import CompileError
    from cudabench.core.timing import TimingOptions
    from cudabench.execution.calibration import use_ceilings
    from cudabench.ops.registry import get_op

    class NoCopyKernel(FakeBackend):
        def load(self, variant, dtype="float32"):
            if variant.op == "stream_copy":
                raise CompileError(f"{variant.path}: planted")
            return super().load(variant, dtype)

    from cudabench.execution import calibration

    monkeypatch.setattr(calibration, "measures_fake_ceilings", lambda: True)  # the fake as a GPU
    monkeypatch.setenv("CUDABENCH_CEILINGS", str(tmp_path / "c.json"))
    monkeypatch.setenv("CUDABENCH_FAKE_L2", "65536")
    monkeypatch.setattr(get_op("stream_copy"), "library", {"memcpy": lambda a, b: a * 0})
    monkeypatch.setattr(get_op("relu"), "library", {"cupy": lambda x: x * 0})  # copy's mix too
    backend = NoCopyKernel()
    quick = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)
    session = fake_session(backend)
    meta = session.new_sweep(
        "t", quick, "test", output=tmp_path / "m", started="2026-11-23T17:00:00+00:00"
    ).meta
    used = use_ceilings(session, meta, output=tmp_path / "m")
    assert used.ceilings is None
    assert used.notes[-1].startswith("% ceiling: not measured: no correct row of stream_copy")
    assert not (tmp_path / "c.json").exists() and list((tmp_path / "m").glob("*_ceilings.json"))


@pytest.mark.time_limit(120)
def test_the_fake_backend_never_measures_its_ceilings_on_its_own(tmp_path, monkeypatch):
    """Issue 46: the docs' GPU-free run, with the ceilings on and none kept, first calibrated
    the fake (60 MiB L2: 500 MB arrays, a NumPy reference at every launch) and sat there. A
    run on the fake measures none: no column, a note saying why, nothing kept, in seconds."""
    import time

    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_CEILINGS": str(tmp_path / "ceilings.json")}
    started = time.monotonic()
    result = runner.invoke(
        app, ["run", "reduce", "-s", "2^12", "-v", "float4", "-o", str(tmp_path / "r")], env=env
    )
    took = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert "measuring this GPU's ceilings" not in result.output and "% ceiling" not in result.stdout
    (path,) = (tmp_path / "r").glob("*.json")  # the run's own, no *_ceilings.json beside it
    doc = json.loads(path.read_text())
    assert doc["meta"]["ceilings"] is None
    assert "% ceiling: none: the fake backend measures no ceilings on its own" in " ".join(
        doc["meta"]["notes"]
    )
    assert not (tmp_path / "ceilings.json").exists()
    assert took < 60  # (it was TIMEOUT rows after 300 s each)
    kept = dataclasses.replace(C)  # kept ones are used, on the fake as anywhere
    ceilings.save(kept, tmp_path / "ceilings.json")
    again = runner.invoke(
        app, ["run", "reduce", "-s", "2^12", "-v", "float4", "-o", str(tmp_path / "k")], env=env
    )
    assert again.exit_code == 0 and "% ceiling" in again.stdout


def test_ceilings_on_the_fake_with_its_large_l2_is_one_line_not_minutes(tmp_path):
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_CEILINGS": str(tmp_path / "ceilings.json")}
    result = runner.invoke(app, ["ceilings", *QUICK, "-o", str(tmp_path / "m")], env=env)
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "CUDABENCH_FAKE_L2=65536" in result.output


# ------------------------------------------------------------------ a run's rows raise a mix's


def test_a_small_row_never_sets_a_ceiling():
    """Issue 46: a row the L2 serves (a write-only row included: no read to speak of) never sets
    or raises its mix's ceiling, however fast; at the calibration size it does."""
    for op, mix in (("stream_write", "write"), ("stream_read", "read"), ("stream_copy", "copy")):
        small = row(op, "1024", gbps=99_999.0, variant="vec4")  # 4 KiB a array
        just_under = row(op, str(int(N) - 4), gbps=99_999.0, variant="vec4")
        at_size = row(op, N, gbps=99_999.0, variant="vec4")
        for r in (small, just_under):
            assert ceilings.mix_of(r, FAKE_DEVICE) is None
            assert ceilings.raised(C, r, FAKE_DEVICE) is None
            assert getattr(ceilings.from_rows(measurement(r), FAKE_DEVICE, "now"), f"{mix}_gbps") < 99_999.0
        assert ceilings.mix_of(at_size, FAKE_DEVICE) == mix
        assert (
            getattr(ceilings.from_rows(measurement(at_size), FAKE_DEVICE, "now"), f"{mix}_gbps") == 99_999.0
        )
        found, up = ceilings.raised(C, at_size, FAKE_DEVICE)
        assert found == mix and getattr(up, f"{mix}_gbps") == 99_999.0
        assert f"{mix}: {op} vec4 (a run's row)" in up.by  # as `by` names the stream ops' rows
    slower = row("stream_read", N, gbps=C.read_gbps - 1, variant="vec4")
    assert ceilings.raised(C, slower, FAKE_DEVICE) is None
    assert ceilings.raised(C, dataclasses.replace(slower, gbps=9e9, status=Status.FAIL), FAKE_DEVICE) is None


H100 = dataclasses.replace(
    FAKE_DEVICE,
    name="NVIDIA H100 80GB HBM3",
    l2_bytes=50 << 20,
    memory_clock_mhz=2619.0,
    bus_width_bits=5120,
    driver_version="580.159.04",
)
# an H100's first run (docs/performance/ceilings.md, 2026-11-25): measured over arrays of 8x
# its 50 MiB L2 (read set by stream_read vec4 at 3,031 GB/s, spread 0.9%)
FIRST_RUN = Ceilings(
    gpu=H100.name,
    driver=H100.driver_version,
    memory_clock_mhz=2619.0,
    measured="2026-11-25T20:27:00+00:00",
    read_gbps=3031.0,
    write_gbps=3280.0,
    copy_gbps=3010.0,
    triad_gbps=3050.0,
    read_spread=0.009,
    write_spread=0.004,
    copy_spread=0.003,
    triad_spread=0.004,
    fma_gflops=51_000.0,
    floor_us=2.0,
    by=(
        "read: stream_read vec4[UNROLL=8]",
        "write: stream_write tile",
        "copy: stream_copy tile",
        "triad: stream_triad tile",
    ),
)


def seeds_rows() -> list[list]:
    """configs/seeds.yaml's cases on that H100, as its rows ran: every row that moves exactly a
    mix over at least the calibration's arrays at 104.6% of the first run's ceiling of its mix
    (the 2^30 sums read at 103.6-104.6%, issue 46), every other row (between two mixes, or under
    the size) at 100.8% of its interpolated ceiling (the row sums' worst, 2026-11-25), sgemm at
    90% of the FMA ceiling: a kernel row and a library row a case."""
    from cudabench.execution.config import load_config
    from cudabench.ops.registry import get_op

    jobs = []
    for bench in load_config(Path("configs/seeds.yaml")).benchmarks:
        for shape in bench.shapes:
            op = get_op(bench.op)
            text = "x".join(str(d) for d in shape)
            moved = op.bytes_moved(shape, 4)
            rows = []
            for name, baseline in (("best", False), ("library", True)):
                r = row(bench.op, text, gbps=1.0, variant=name, baseline=baseline, bytes_moved=moved)
                if ceilings.read_fraction(r) is None:  # sgemm: GFLOP/s
                    r = dataclasses.replace(r, gbps=None, gflops=0.9 * FIRST_RUN.fma_gflops)
                else:
                    mix = ceilings.mix_of(r, H100)
                    best = 1.046 * getattr(FIRST_RUN, f"{mix}_gbps") if mix else None
                    worst = 1.008 * ceilings.gbps_at(FIRST_RUN, ceilings.read_fraction(r))
                    r = dataclasses.replace(r, gbps=(best or worst) * (1.0 if name == "best" else 0.995))
                rows.append(r)
            jobs.append(rows)
    return jobs


class Replay:
    """An executor that hands the sweep rows made beforehand, job by job."""

    def __init__(self, rows):
        self.rows, self.devices, self.cuts_jobs = rows, [0], True

    def execute(self, jobs, events, ready=None):
        for index, rows in enumerate(self.rows):
            for r in rows:
                events.row(index, r)
            events.job_done(index, rows)


def test_the_seeds_on_a_fresh_machine_show_no_row_above_its_ceiling(tmp_path, monkeypatch):
    """Issue 46: a first run's ceilings are measured over arrays of 8x the L2, and the seeds'
    larger arrays move faster (reduce at 2^30 read at 103.6-104.6% of the read ceiling, H100).
    Each row that moves exactly a mix at the calibration size or more raises that mix's
    ceiling for the run; the rows before it are measured again; no row ends above 100%, and
    the run says which rows raised which ceiling."""
    from cudabench.core.records import Case
    from cudabench.core.timing import TimingOptions
    from cudabench.measure.runner import CaseJob

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)  # configs/seeds.yaml
    made = seeds_rows()
    jobs = [
        CaseJob(Case(rows[0].op, tuple(int(d) for d in rows[0].shape.split("x"))), (), (), TimingOptions())
        for rows in made
    ]
    before = [[ceilings.pct_ceiling(r, FIRST_RUN) for r in rows] for rows in made]
    assert max(p for ps in before for p in ps) > 104  # as measured against the first run's
    with fake_session() as session:
        sweep = session.new_sweep("seeds", TimingOptions(), "test", output=tmp_path / "r", ceilings=FIRST_RUN)
        sweep.meta = dataclasses.replace(sweep.meta, device=H100)
        sweep.executor = Replay(made)
        sweep.run(jobs)
        sweep.finish()
    rows = sweep.rows
    assert len(rows) == 2 * len(made) and all(r.pct_ceiling is not None for r in rows)
    assert max(r.pct_ceiling for r in rows) <= 100.0 + 1e-9, [
        (r.op, r.shape, r.variant, round(r.pct_ceiling, 1)) for r in rows if r.pct_ceiling > 100
    ]
    assert not [r for r in rows if ceilings.flagged(r)]
    assert not [n for n in sweep.meta.notes if "measure them again" in n]  # nothing left to ask
    c = sweep.meta.ceilings
    assert c.read_gbps == pytest.approx(1.046 * FIRST_RUN.read_gbps)  # the 2^30 sums' best
    assert c.write_gbps == FIRST_RUN.write_gbps  # no seeds row writes only
    assert "read: reduce best 1073741824 float32 (a run's row)" in c.by
    raised = [n for n in sweep.meta.notes if n.startswith("% ceiling: the ")]
    assert {n.split()[3] for n in raised} == {"read", "copy", "triad"}
    assert any("faster than the measured 3,031 GB/s" in n for n in raised)
    saved = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    assert saved["meta"]["ceilings"]["read_gbps"] == c.read_gbps
    assert max(r["pct_ceiling"] for r in saved["rows"]) <= 100.0 + 1e-9


def test_a_runs_own_rows_at_the_calibration_size_raise_its_ceiling(tmp_path, fake_env):
    """Through the CLI on the fake: kept ceilings its 2^17 sums beat (8x its 64 KiB L2, read
    1 GB/s): the read ceiling becomes theirs, no row is above it or flagged, and the run says
    so; the 2^15 sums (4x the L2) raise nothing."""
    low = dataclasses.replace(C, read_gbps=1.0, read_spread=0.001)
    ceilings.save(low, tmp_path / "ceilings.json")
    args = ["run", "reduce", "-s", "2^15", "-s", "2^17", "-v", "float4", "-v", "atomic", *QUICK]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "r")], env=fake_env)
    assert result.exit_code == 0, result.output
    doc = json.loads(next((tmp_path / "r").glob("*.json")).read_text())
    assert len(doc["rows"]) == 6 and 98 < max(r["pct_ceiling"] for r in doc["rows"]) <= 100.0
    assert not [r for r in doc["rows"] if "above the measured" in r["notes"]]
    fastest = max((r for r in doc["rows"] if r["shape"] == "131072"), key=lambda r: r["gbps"])
    assert doc["meta"]["ceilings"]["read_gbps"] == fastest["gbps"]
    text = " ".join(result.output.split())
    assert "% ceiling: the read ceiling raised to" in text and "measure them again" not in text
    assert ceilings.load(tmp_path / "ceilings.json") == [low]  # the run's, not the kept file's
