"""Telemetry through a fake NVML (backends/fake_nvml.py): slowed samples marked and dropped,
energy per call, settling, cool-down, the SM clock lock given back, the input fill."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import gpu_available
from typer.testing import CliRunner

from cudabench.backends.fake import FakeBackend
from cudabench.backends.fake_nvml import COOLING_C_PER_S, FakeGauge
from cudabench.core.records import Case, KernelVariant, Launch, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.measure.sampling import measure
from cudabench.measure.telemetry import (
    POLL_COST,
    SETTLE_CAP_S,
    SETTLE_STABLE,
    SETTLE_WINDOW_S,
    Watch,
    cool_down,
    energy_per_call,
    settle,
    throttled_note,
)

QUICK = TimingOptions(warmup=1, min_samples=20, min_time_s=0.0, max_time_s=1.0, energy=True)


def float4() -> KernelVariant:
    launch = Launch("reduce_sum_float4", 256, "segments")
    return KernelVariant("reduce", "float4", "/k/float4.cu", (launch,), "t")


def store_sum(grid, block, x, out, *rest):
    out[...] = x.sum(axis=-1, dtype=np.float32)


def one_row(gauge, timing=QUICK, clock=None, kernels=None):
    backend = FakeBackend(kernels=kernels or {"reduce_sum_float4": store_sum}, gauge=gauge, clock=clock)
    (row,) = Runner(backend).run_job(CaseJob(Case("reduce", (64, 1024)), (float4(),), (), timing))
    return row


# ------------------------------------------------------------------ slowed samples


def test_the_watch_marks_the_samples_since_the_poll_that_saw_a_slowdown():
    gauge = FakeGauge(slowdowns={3})  # the counter moves at the fourth look (poll 3)
    watch = Watch(gauge, poll_s=0)  # poll 0: the first reading
    for _ in range(5):
        gauge.advance(0.001)  # a 1 ms sample
        watch.sample_done()  # polls 1..5
    t = watch.finish()
    assert t.marked == (False, False, True, False, False)
    assert t.reasons == ("sw power cap",)


def test_a_slowdown_over_before_the_poll_is_caught_by_the_violation_counter():
    gauge = FakeGauge(ended={2})  # poll 2 sees no reason active, only the counter moved
    watch = Watch(gauge, poll_s=0)
    for _ in range(4):
        gauge.advance(0.001)
        watch.sample_done()
    t = watch.finish()
    assert t.marked == (False, True, False, False)
    assert t.reasons == ()


def test_a_slow_nvml_is_polled_less_often():
    gauge = FakeGauge(read_s=0.004)  # 4 ms a poll
    watch = Watch(gauge)
    for _ in range(300):
        gauge.advance(0.002)  # a 2 ms sample
        watch.sample_done()
    assert 2 <= gauge.polls <= 4  # the first reading, then one poll every 200 ms at most
    assert watch.poll_s == pytest.approx(0.004 * POLL_COST, rel=0.01)


def test_a_row_with_a_few_slowed_samples_is_noted_and_drop_throttled_leaves_them_out():
    slowed = range(5, 10)  # 2 ms samples: a poll after each, five of them see a slowdown
    row = one_row(FakeGauge(slowdowns=slowed), clock=lambda name: 2.0)
    assert row.status is Status.OK and row.throttled_samples == 5 and row.dropped_samples == 0
    assert "5 of 20 samples taken while the GPU was slowed (sw power cap): --drop-throttled" in row.notes
    kept = one_row(
        FakeGauge(slowdowns=slowed),
        TimingOptions(**{**QUICK.__dict__, "drop_throttled": True}),
        clock=lambda name: 2.0,
    )
    assert kept.dropped_samples == 5 and kept.samples == 15
    assert "5 of 20 samples taken while the GPU was slowed (sw power cap): left out" in kept.notes


def test_watch_off_reads_no_gauge_and_marks_nothing():
    """`watch: false` (tune's search rounds): no NVML read during the samples, so a slowed
    card marks nothing and the row carries no clocks; on, the same row is marked."""
    timing = TimingOptions(**{**QUICK.__dict__, "energy": False, "watch": False})
    gauge = FakeGauge(slowdowns=range(20))
    row = one_row(gauge, timing, clock=lambda name: 2.0)
    assert row.status is Status.OK and gauge.polls == 0
    assert not row.throttled_samples and row.sm_mhz_median is None
    watched = FakeGauge(slowdowns=range(20))
    row = one_row(watched, dataclasses.replace(timing, watch=True), clock=lambda name: 2.0)
    assert watched.polls > 0 and row.throttled_samples > 0


def test_a_rare_slowdown_gets_no_note_and_every_sample_slowed_drops_none():
    assert throttled_note(1, 100, ("sw power cap",), 0) == ""
    row = one_row(
        FakeGauge(slowdowns=range(0, 10_000)), TimingOptions(**{**QUICK.__dict__, "drop_throttled": True})
    )
    assert row.dropped_samples == 0 and row.samples == row.throttled_samples == 20
    assert "every sample taken while the GPU was slowed" in row.notes


# ------------------------------------------------------------------ energy


def test_energy_per_call_is_the_counter_over_back_to_back_calls():
    row = one_row(FakeGauge(power_w=300.0), clock=lambda name: 0.1)  # 0.1 ms a call
    assert row.energy_mj == pytest.approx(30.0, rel=1e-3)  # 300 W x 0.1 ms
    assert row.power_w == pytest.approx(300.0, rel=1e-3)
    assert row.gb_per_j == pytest.approx(row.bytes_moved / 1e9 / 0.030, rel=1e-3)


def test_without_the_energy_counter_power_times_the_window_stands_in():
    gauge = FakeGauge(power_w=200.0, energy=False)
    backend = FakeBackend(kernels={"k": store_sum}, gauge=gauge, clock=lambda name: 0.5)
    energy = energy_per_call(backend, lambda: None, gauge, 0.5)
    assert energy is not None and not energy.counter
    assert energy.mj_per_call == pytest.approx(100.0, rel=0.01)  # 200 W x 0.5 ms
    assert energy.calls * 0.5 >= 100  # the window: at least 0.1 s of calls


@pytest.mark.parametrize("period", [0.001, 0.01, 0.1])
def test_the_energy_window_spans_whole_counter_updates(period):
    """A counter that moves in steps: the window opens and closes on updates, so the energy
    per call is right however coarse the steps, and the window grows with them."""
    gauge = FakeGauge(power_w=400.0, energy_period_s=period)
    backend = FakeBackend(gauge=gauge, clock=lambda name: 0.05)  # 50 us a call
    energy = energy_per_call(backend, lambda: None, gauge, 0.05)
    assert energy is not None and energy.counter
    assert energy.mj_per_call == pytest.approx(20.0, rel=0.02)  # 400 W x 50 us
    assert energy.window_s >= max(0.02, 4 * period) * 0.99


def test_a_slow_counter_read_lengthens_the_window():
    """A read of 4 ms: the window is at least 25 reads long, so where in a read the update
    fell moves the count of calls by a few percent at most."""
    gauge = FakeGauge(power_w=400.0, energy_period_s=0.001, read_s=0.004)
    backend = FakeBackend(gauge=gauge, clock=lambda name: 0.05)
    energy = energy_per_call(backend, lambda: None, gauge, 0.05)
    assert energy is not None and energy.window_s >= 0.1
    assert energy.mj_per_call == pytest.approx(20.0, rel=0.02)


def test_the_energy_window_waits_for_what_it_queued():
    class Counting(FakeBackend):
        syncs = 0

        def synchronize(self):
            Counting.syncs += 1

    gauge = FakeGauge()
    backend = Counting(gauge=gauge, clock=lambda name: 0.05)
    energy_per_call(backend, lambda: None, gauge, 0.05)
    assert Counting.syncs == 2  # before the window, and after it (what was queued runs out)


def test_a_counter_that_never_moves_gives_no_energy():
    gauge = FakeGauge(energy_period_s=10.0)  # slower than the window's cap
    backend = FakeBackend(gauge=gauge)
    assert energy_per_call(backend, lambda: None, gauge, 0.1) is None


def test_no_nvml_no_energy_and_cold_rows_have_none():
    assert one_row(None).energy_mj is None
    cold = one_row(FakeGauge(), TimingOptions(**{**QUICK.__dict__, "cold": True}))
    assert cold.status is Status.OK and cold.energy_mj is None
    off = one_row(FakeGauge(), TimingOptions(**{**QUICK.__dict__, "energy": False}))
    assert off.energy_mj is None
    assert TimingOptions().energy is False  # opt-in: the window costs every row time


# ------------------------------------------------------------------ settling and cooling


def test_settle_waits_for_the_clock_to_stop_moving():
    gauge = FakeGauge(sm_mhz=lambda t: 1980 if t > 0.3 else int(1400 + 1900 * t))

    def busy(seconds):
        gauge.advance(seconds)

    took = settle(busy, gauge)
    assert 0.3 < took < 0.3 + 4 * 0.05  # settled within a few windows of the ramp's end
    steady = FakeGauge()
    windows = SETTLE_STABLE + 1  # the first, then SETTLE_STABLE alike
    assert settle(lambda s: steady.advance(s), steady) == pytest.approx(windows * SETTLE_WINDOW_S, abs=0.02)


def test_settle_gives_up_at_its_cap():
    gauge = FakeGauge(sm_mhz=lambda t: 1410 if int(t * 10) % 2 else 1980)  # jumps every 0.1 s
    assert settle(lambda s: gauge.advance(s), gauge) == pytest.approx(SETTLE_CAP_S, abs=0.06)


def test_settle_auto_runs_for_cold_long_launches_only():
    long = lambda name: 0.2  # noqa: E731  (200 us a launch)
    cold = one_row(FakeGauge(), TimingOptions(**{**QUICK.__dict__, "cold": True}), clock=long)
    hot = one_row(FakeGauge(), QUICK, clock=long)
    assert cold.settle_s is not None and cold.settle_s > 0 and hot.settle_s is None
    on = one_row(FakeGauge(), TimingOptions(**{**QUICK.__dict__, "settle": "on"}), clock=long)
    assert on.settle_s is not None


def test_cooldown_waits_until_the_gpu_is_cool_enough():
    gauge = FakeGauge(temp_c=70.0)  # cools 2 C a second
    assert cool_down(gauge, 50) == pytest.approx((70 - 50) / COOLING_C_PER_S, abs=0.6)
    row = one_row(FakeGauge(temp_c=61.0), TimingOptions(**{**QUICK.__dict__, "cooldown_c": 55}))
    assert row.cooldown_s == pytest.approx((61 - 55) / COOLING_C_PER_S, abs=0.6) and row.temp_c is not None
    assert row.temp_c[0] <= 55


def test_a_row_without_energy_never_reads_the_slow_energy_counter():
    gauge = FakeGauge()
    row = one_row(gauge, TimingOptions(**{**QUICK.__dict__, "energy": False}))
    assert row.sm_mhz_median == 1980 and row.temp_c == (40, 40)
    assert gauge.energy_reads == 0


@pytest.mark.parametrize("value, opened", [("off", False), ("0", False), ("", True), ("on", True)])
def test_cudabench_nvml_off_opens_no_gauge(monkeypatch, value, opened):
    import cudabench.backends.nvml as nvml

    monkeypatch.setattr(nvml, "NvmlGauge", lambda bus_id: f"gauge of {bus_id}")
    monkeypatch.setenv("CUDABENCH_NVML", value)
    assert nvml.open_gauge("0000:01:00.0") == ("gauge of 0000:01:00.0" if opened else None)


def test_measure_without_a_gauge_has_no_telemetry():
    backend = FakeBackend(gauge=None)
    m = measure(backend, lambda: None, QUICK)
    assert m.telemetry is None and m.throttled == 0


# ------------------------------------------------------------------ energy: a note where a row has none


def run_notes(tmp_path, op, shape, variant, gauge, **timing):
    from cudabench.core.shapes import parse_shape
    from cudabench.execution.plan import plan
    from tests.conftest import fake_session

    work = plan(op, [parse_shape(shape)], [variant], None, min_samples=3, min_time_s=0.0, warmup=1, **timing)
    with fake_session(FakeBackend(gauge=gauge)) as session:
        sweep = session.start(work.op_label, work.timing, "test", output=tmp_path / "out", record=False)
        (rows,) = sweep.run(work.jobs)
        return rows, sweep.meta.notes


def test_an_in_place_op_s_rows_get_one_note_instead_of_energy(tmp_path):
    rows, notes = run_notes(tmp_path, "reduce_scale", "64x256", "warp", FakeGauge(), energy=True)
    kernel = [r for r in rows if not r.is_baseline]
    assert kernel and all(r.status is Status.OK and r.energy_mj is None for r in kernel)
    assert notes == (
        "energy: reduce_scale's kernel rows have none: the op works in place and its "
        "input is restored before every call, which a window of back-to-back calls "
        "cannot do",
    )


def test_rows_with_their_energy_or_without_asking_get_no_note(tmp_path):
    rows, notes = run_notes(tmp_path, "reduce", "64x1024", "float4", FakeGauge(), energy=True)
    assert all(r.energy_mj is not None for r in rows if r.status is Status.OK) and not notes
    rows, notes = run_notes(tmp_path, "reduce_scale", "64x256", "warp", FakeGauge())
    assert not notes


def test_no_nvml_is_one_note_when_energy_was_asked(tmp_path):
    rows, notes = run_notes(tmp_path, "reduce", "64x1024", "float4", None, energy=True)
    assert all(r.energy_mj is None for r in rows)
    assert notes == ("energy: none: NVML does not answer for this GPU (or CUDABENCH_NVML=off)",)


# ------------------------------------------------------------------ the SM clock lock


def run_locked(tmp_path, monkeypatch, gauge, clocks="max", fail=False):
    from cudabench.execution.plan import plan
    from tests.conftest import fake_session

    monkeypatch.setenv("CUDABENCH_STATE", str(tmp_path / "state"))
    work = plan(
        "reduce", [(64, 1024)], ["float4"], None, min_samples=3, min_time_s=0.0, warmup=1, clocks=clocks
    )
    with fake_session(FakeBackend(gauge=gauge)) as session:
        sweep = session.start(work.op_label, work.timing, "test", output=tmp_path / "out", record=False)
        assert gauge.locked == (1980 if gauge.can_lock and clocks == "max" else None)
        if fail:
            raise RuntimeError("a crash in the middle of the run")
        sweep.run(work.jobs)
        return sweep.meta


def test_clocks_are_locked_for_the_run_and_given_back(tmp_path, monkeypatch):
    gauge = FakeGauge()
    meta = run_locked(tmp_path, monkeypatch, gauge)
    assert gauge.lock_calls == [1980, None] and gauge.locked is None
    assert meta.timing.clocks == "max" and not meta.notes
    assert not list((tmp_path / "state").rglob("*.json"))  # no marker left


def test_a_crash_still_gives_the_clock_back(tmp_path, monkeypatch):
    gauge = FakeGauge()
    with pytest.raises(RuntimeError, match="a crash"):
        run_locked(tmp_path, monkeypatch, gauge, fail=True)
    assert gauge.lock_calls == [1980, None] and gauge.locked is None


def test_a_refused_lock_is_one_note_and_the_run_says_default(tmp_path, monkeypatch):
    gauge = FakeGauge(can_lock=False)
    meta = run_locked(tmp_path, monkeypatch, gauge)
    assert meta.timing.clocks == "default"
    assert len(meta.notes) == 1 and "--clocks max: cannot lock the SM clock at 1980 MHz" in meta.notes[0]


def dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def leave_marker(tmp_path, monkeypatch, pid: int) -> None:
    from cudabench.backends.clocklock import state_dir

    monkeypatch.setenv("CUDABENCH_STATE", str(tmp_path / "state"))
    state_dir().mkdir(parents=True)
    (state_dir() / "gpu.json").write_text(json.dumps({"pci_bus_id": "", "mhz": 1410, "pid": pid}))


def test_a_lock_left_by_a_killed_run_is_reset_by_the_next(tmp_path, monkeypatch):
    pid = dead_pid()
    leave_marker(tmp_path, monkeypatch, pid)
    gauge = FakeGauge()
    gauge.locked = 1410  # as the killed run left it
    meta = run_locked(tmp_path, monkeypatch, gauge, clocks="default")
    assert gauge.lock_calls == [None] and gauge.locked is None
    assert any(f"pid {pid}" in n and "1410 MHz" in n and "reset now" in n for n in meta.notes)


def test_a_lock_held_by_a_run_still_going_is_left_alone(tmp_path, monkeypatch):
    import os

    from cudabench.backends.clocklock import restore_left

    leave_marker(tmp_path, monkeypatch, os.getppid())  # a live process: the run beside this one
    gauge = FakeGauge()
    gauge.locked = 1410
    assert restore_left(lambda pci_bus_id: gauge) == []
    assert gauge.lock_calls == [] and gauge.locked == 1410
    assert (tmp_path / "state" / "clock-locks" / "gpu.json").exists()


# ------------------------------------------------------------------ fill, usage, table


def test_fill_zeros_gives_zero_inputs_and_checked_rows():
    seen = []

    def record(grid, block, x, out, *rest):
        seen.append(float(np.abs(x).sum()))
        store_sum(grid, block, x, out)

    row = one_row(
        FakeGauge(),
        TimingOptions(**{**QUICK.__dict__, "fill": "zeros"}),
        kernels={"reduce_sum_float4": record},
    )
    assert row.status is Status.OK and seen and set(seen) == {0.0}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--settle", "sometimes"], "--settle 'sometimes': choose auto, on, off"),
        (["--fill", "noise"], "--fill 'noise': choose random, zeros, ones"),
        (["--clocks", "fast"], "--clocks 'fast': choose default, base, max or a clock in MHz"),
    ],
)
def test_bad_telemetry_options_are_one_line_and_exit_2(args, message):
    from cudabench.cli import app

    result = CliRunner().invoke(app, ["run", "reduce", "--shape", "64x64", *args])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_a_config_may_set_the_telemetry_options(tmp_path):
    from cudabench.execution.config import timing_from

    timing = timing_from(
        {"clocks": 1755, "fill": "ones", "settle": "on", "drop_throttled": True, "cooldown_c": 45}, "c.yaml"
    )
    assert (timing.clocks, timing.fill, timing.settle, timing.drop_throttled, timing.cooldown_c) == (
        "1755",
        "ones",
        "on",
        True,
        45,
    )


def test_the_table_shows_energy_only_where_measured(tmp_path):
    from rich.console import Console

    from cudabench.present.tables import results_table
    from tests.conftest import fake_session

    def table_text(gauge):
        from cudabench.execution.plan import plan

        work = plan(
            "reduce", [(64, 1024)], ["float4"], None, min_samples=3, min_time_s=0.0, warmup=1, energy=True
        )
        with fake_session(FakeBackend(gauge=gauge)) as session:
            sweep = session.start(
                work.op_label, work.timing, "t", output=tmp_path / str(id(gauge)), record=False
            )
            sweep.run(work.jobs)
        console = Console(width=250, record=True)
        console.print(results_table(sweep.rows, sweep.meta, "reduce"))
        return console.export_text()

    assert "GB/J" in table_text(FakeGauge()) and " mJ " in table_text(FakeGauge())
    assert "GB/J" not in table_text(None)


def test_history_shows_energy_and_the_sm_clock_where_measured(tmp_path, monkeypatch):
    from cudabench.cli import app

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    db = str(tmp_path / "h.db")
    quick = ["--min-samples", "3", "--min-time", "0", "--warmup", "1", "--no-ceilings", "--db", db]
    runner = CliRunner()
    history = ["history", "reduce", "-v", "float4", "--db", db]
    shown = []
    for extra in ([], ["--energy"]):
        result = runner.invoke(
            app,
            [
                "run",
                "reduce",
                "-s",
                "64x1024",
                "-v",
                "float4",
                *quick,
                *extra,
                "-o",
                str(tmp_path / f"r{len(extra)}.json"),
            ],
        )
        assert result.exit_code == 0, result.output
        shown.append(runner.invoke(app, history, env={"COLUMNS": "250"}))
        assert shown[-1].exit_code == 0, shown[-1].output
    assert " mJ " not in shown[0].stdout and "SM MHz" in shown[0].stdout and "1980" in shown[0].stdout
    assert " mJ " in shown[1].stdout


# --- the planted slowdown's tools (scripts/hot_ops, scripts/heater.py) -------------------

REPO = Path(__file__).resolve().parent.parent


def test_the_hot_op_loads_as_a_user_op_and_its_reference_is_a_product():
    from cudabench.ops.registry import load_op_file

    hot = load_op_file(REPO / "scripts" / "hot_ops" / "hgemm" / "op.py")
    assert hot.name == "hgemm"
    a, b = hot.make_inputs(np, (3, 5, 7), seed=1)
    ref, tol = hot.expected(np, (a, b))
    assert ref.shape == (15,) and np.allclose(ref, (a.astype(np.float64) @ b).reshape(-1))
    assert np.all(tol > 0) and np.all(tol < 1e-4 * (np.abs(a) @ np.abs(b)).reshape(-1))
    assert hot.flops((3, 5, 7)) == 2 * 3 * 5 * 7
    from cudabench.cli import app

    listed = CliRunner().invoke(app, ["list", "hgemm", "--ops", str(REPO / "scripts" / "hot_ops")])
    assert listed.exit_code == 0, listed.output
    assert "torch_mm" in listed.stdout and "bf16" in listed.stdout


def test_the_heater_without_a_command_is_a_usage_error():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "heater.py"), "--delay", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "no command to run" in done.stderr


@pytest.mark.skipif(gpu_available(), reason="here the heater would heat")
def test_a_heater_that_cannot_heat_stops_its_command_in_one_line():
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "heater.py"),
            "--delay",
            "0",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(60)",
        ],
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line, no traceback
    assert "no heat" in done.stderr and "the command was stopped" in done.stderr
