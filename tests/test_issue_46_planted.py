"""Issue 46, "tests that cannot see a planted bug" (items 10, 11, 12): each test here fails
with the bug its docstring names planted, and passes without. GPU-free (the fake backend, its
fake NVML and fake CUPTI)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from typer.testing import CliRunner

import cudabench.measure.sampling as sampling
from cudabench.backends.fake import FAKE_DEVICE, FakeBackend
from cudabench.backends.fake_nvml import FakeGauge
from cudabench.cli import app
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.measure.sampling import measure, measure_interleaved
from cudabench.ops import registry
from cudabench.ops.discovery import discover

runner = CliRunner()
SLOWED = range(3, 100_000, 3)  # the polls (fake NVML) that see the card slowed for power


# ---------------------------------------------------------------- 10: telemetry


@pytest.mark.parametrize("timer", ["cupti", "both", "auto"])
def test_10_the_kernel_clock_marks_each_launch_of_a_slowed_batch(timer):
    """Planted: the marks of a graph sample not spread over its launches under the kernel
    clock (every launch is a sample there): no sample was ever marked."""
    gauge = FakeGauge(slowdowns=SLOWED)
    backend = FakeBackend(clock=lambda name: 0.01, kernel_clock=True, gauge=gauge)
    options = TimingOptions(warmup=0, min_samples=2000, min_time_s=0.0, max_time_s=1.0, timer=timer)
    m = measure(backend, backend.empty_call(), options)
    assert m.timer == "cupti" and m.method == "graph" and m.batch > 1
    assert m.telemetry is not None and any(m.telemetry.marked)
    assert 0 < m.throttled < len(m.samples_ms) and m.throttled % m.batch == 0
    dropped = measure(
        FakeBackend(clock=lambda name: 0.01, kernel_clock=True, gauge=FakeGauge(slowdowns=SLOWED)),
        backend.empty_call(),
        dataclasses.replace(options, drop_throttled=True),
    )
    assert dropped.dropped == m.throttled and len(dropped.samples_ms) == len(m.samples_ms) - m.throttled


def test_10_interleaved_drop_throttled_leaves_the_slowed_samples_out():
    """Planted: `--interleave --drop-throttled` keeping the slowed samples (the interleaved
    path not handing its options to the measurement)."""
    backend = FakeBackend(clock=lambda name: 2.0, gauge=FakeGauge(slowdowns=SLOWED))
    options = TimingOptions(warmup=0, min_samples=20, min_time_s=0.0, max_time_s=10.0, drop_throttled=True)
    calls = [(backend.empty_call(), sampling.contextlib.nullcontext, None) for _ in range(2)]
    measured = measure_interleaved(backend, calls, options)
    assert sum(m.dropped for m in measured) > 0
    for m in measured:
        assert m.dropped == m.throttled and len(m.samples_ms) == 20 - m.dropped


def test_10_the_settle_loop_keeps_the_card_busy_between_its_clock_reads(monkeypatch):
    """Planted: settling with one call per NVML read (the card idles while the host reads
    its clock, so it never warms up): the GPU must be busy most of the settling time."""
    gauge = FakeGauge(read_s=0.0002)  # a read takes as long as a launch here
    backend = FakeBackend(clock=lambda name: 0.2, gauge=gauge)  # 200 us launches
    seen: dict[str, float] = {}
    launches = [0]
    settle = sampling.settle

    def call() -> None:
        launches[0] += 1

    def watched(run_window, g):  # type: ignore[no-untyped-def]
        polls, calls = g.polls, launches[0]
        took = settle(run_window, g)
        seen.update(calls=launches[0] - calls, polls=g.polls - polls, took=took)
        return took

    monkeypatch.setattr(sampling, "settle", watched)
    options = TimingOptions(warmup=0, min_samples=3, min_time_s=0.0, max_time_s=1.0, settle="on")
    m = measure(backend, call, options)
    assert m.settle_s is not None and seen["polls"] > 0
    assert seen["calls"] >= 10 * seen["polls"]  # many launches a read, not one
    assert seen["calls"] * 0.2e-3 >= 0.9 * seen["took"]  # busy at least 90% of the time


def locked_session(tmp_path, monkeypatch, gauge):  # type: ignore[no-untyped-def]
    from cudabench.execution.plan import plan
    from tests.conftest import fake_session

    monkeypatch.setenv("CUDABENCH_STATE", str(tmp_path / "state"))
    work = plan(
        "reduce", [(64, 1024)], ["float4"], None, min_samples=3, min_time_s=0.0, warmup=1, clocks="max"
    )
    session = fake_session(FakeBackend(gauge=gauge))
    session.start(work.op_label, work.timing, "test", output=tmp_path / "out", record=False)
    assert gauge.locked == 1980
    return session


def test_10_a_crash_gives_the_clock_back_at_once_not_when_collected(tmp_path, monkeypatch):
    """Planted: the SM clock reset only on a graceful close. The session is still referenced
    here, so no garbage collection can reset it in its place."""
    gauge = FakeGauge()
    session = locked_session(tmp_path, monkeypatch, gauge)
    with pytest.raises(RuntimeError, match="a crash"):
        with session:
            raise RuntimeError("a crash in the middle of the run")
    assert gauge.lock_calls == [1980, None] and gauge.locked is None
    assert not list((tmp_path / "state").rglob("*.json"))  # the marker gone with it
    killed = FakeGauge()
    other = locked_session(tmp_path, monkeypatch, killed)
    other.close(graceful=False)  # Ctrl-C: the workers killed, the clock still given back
    assert killed.lock_calls == [1980, None] and killed.locked is None
    assert other is not None


def test_10_another_users_live_run_keeps_its_lock(tmp_path, monkeypatch):
    """Planted: a marker whose process answers EPERM (another user's run, alive) taken for
    dead, and its lock reset under it."""
    from cudabench.backends.clocklock import restore_left, state_dir

    monkeypatch.setenv("CUDABENCH_STATE", str(tmp_path / "state"))
    state_dir().mkdir(parents=True)
    (state_dir() / "gpu.json").write_text(json.dumps({"pci_bus_id": "", "mhz": 1410, "pid": 424242}))
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if pid == 424242:
            raise PermissionError(1, "Operation not permitted")  # alive, not ours
        real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    gauge = FakeGauge()
    gauge.locked = 1410
    assert restore_left(lambda pci_bus_id: gauge) == []
    assert gauge.lock_calls == [] and gauge.locked == 1410
    assert (state_dir() / "gpu.json").exists()


# ---------------------------------------------------------------- 11: compare


def test_11_allow_mixed_timers_allows_the_timer_and_nothing_else(tmp_path):
    """Planted: `--allow-mixed-timers` letting every fingerprint difference through (a driver
    change judged as if the timer were the only difference)."""
    from cudabench.record.results import write_results
    from tests.test_compare import META, row

    newer = dataclasses.replace(META, device=dataclasses.replace(FAKE_DEVICE, driver_version="999.1"))
    older = dataclasses.replace(META, device=dataclasses.replace(FAKE_DEVICE, driver_version="575.1"))
    events = row("float4", 8.5, seed=1)
    cupti = dataclasses.replace(row("float4", 6.4, seed=2), timer="cupti")
    write_results(tmp_path / "a", older, [events])
    write_results(tmp_path / "b", newer, [cupti])
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json"]
    mixed = runner.invoke(app, [*args, "--allow-mixed-timers"])
    assert [r["verdict"] for r in json.loads(mixed.stdout)] == ["NOT_COMPARABLE"]
    anything = runner.invoke(app, [*args, "--allow-mismatch"])
    assert [r["verdict"] for r in json.loads(anything.stdout)] == ["FASTER"]
    write_results(tmp_path / "c", older, [cupti])  # the timer alone differs: allowed
    alone = runner.invoke(app, [args[0], str(tmp_path / "a.json"), str(tmp_path / "c.json"), "--json"])
    assert [r["verdict"] for r in json.loads(alone.stdout)] == ["NOT_COMPARABLE"]
    allowed = runner.invoke(
        app, [args[0], str(tmp_path / "a.json"), str(tmp_path / "c.json"), "--json", "--allow-mixed-timers"]
    )
    assert [r["verdict"] for r in json.loads(allowed.stdout)] == ["FASTER"]


# ---------------------------------------------------------------- 12: validation

BUMP_OP = """\
from cudabench.op import Op, Tensor, elements


class Bump(Op):
    about = "x += 1, in place: not idempotent (twice is x + 2)"
    dims = ("n",)
    inputs = (Tensor("x", "n"),)
    outputs = (Tensor("x", "n"),)
    rules = {"flat": elements()}

    def reference(self, xp, x):
        return x + 1
"""
BUMP_VARIANTS = '''\
"""Python variants of bump: right, wrong at once, wrong only once timed."""
from cudabench.op import variant

CALLS = {"late": 0}


@variant(name="bump", writes=True, about="x += 1 in place")
def bump(x):
    x += 1


@variant(name="twice", writes=True, about="x += 2: wrong from the first call")
def twice(x):
    x += 2


@variant(name="late", writes=True, about="right on its first call, wrong on every later one")
def late(x):
    CALLS["late"] += 1
    x += 1 if CALLS["late"] == 1 else 3
'''


@pytest.fixture
def bump_op(tmp_path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "ops" / "bump"
    folder.mkdir(parents=True)
    (folder / "op.py").write_text(BUMP_OP)
    (folder / "python_rows.py").write_text(BUMP_VARIANTS)
    registry.use_ops([tmp_path / "ops"])
    yield folder
    registry.use_ops([])


def bump_rows(timing: TimingOptions, names=("bump", "twice", "late"), log=None):  # type: ignore[no-untyped-def]
    variants, _ = discover("bump", [])
    chosen = tuple(v for v in variants if v.name in names)
    backend = FakeBackend(clock=lambda name: 0.005)  # 5 us calls: batched, a CUDA graph a sample
    backend.step_log = log if log is not None else None
    return {r.variant: r for r in Runner(backend).run_job(CaseJob(Case("bump", (1000,)), chosen, (), timing))}


QUICK = TimingOptions(warmup=0, min_samples=5, min_time_s=0.0, max_time_s=1.0)


@pytest.mark.parametrize("interleave", [False, True])
def test_12_a_python_variant_is_checked_before_timing_and_again_after(bump_op, interleave):
    """Planted: a Python variant not checked before timing (`twice` then fails only after it,
    having been timed), or not checked again after (`late` passes)."""
    rows = bump_rows(dataclasses.replace(QUICK, interleave=interleave))
    assert rows["twice"].status is Status.FAIL and not rows["twice"].error.startswith("after timing")
    assert rows["twice"].samples in (None, 0) and rows["twice"].time_us is None
    assert rows["late"].status is Status.FAIL and rows["late"].error.startswith("after timing: ")


@pytest.mark.parametrize("interleave", [False, True])
def test_12_an_in_place_input_is_restored_before_every_graph_sample(bump_op, interleave):
    """Planted: the in-place input not restored before each CUDA-graph sample: x += 1 applied
    once a sample then leaves x + samples, which the check after timing sees (the catalogue's
    one in-place op gives the same result applied twice: no check could see it there)."""
    from cudabench.backends.base import LAUNCH, RESET, StepLog

    log = StepLog()
    rows = bump_rows(dataclasses.replace(QUICK, interleave=interleave), names=("bump", "twice"), log=log)
    ok = rows["bump"]
    assert ok.status is Status.OK, ok.error  # checked on one call: a graph applied it `batch` times
    assert ok.method == "graph" and ok.batch and ok.batch > 1 and ok.samples and ok.samples >= 5
    assert sum(s == [RESET, LAUNCH] for s in log.samples) >= ok.samples, log.samples
