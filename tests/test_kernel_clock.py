"""The kernel clock (`--timer cupti|both|auto`) through the fake backend, whose fake CUPTI
writes kernel records as CUPTI would (a graph's launches under one correlation id, a flush
kernel owned by no sample, multi-kernel launches): measure, the runner's rows, the fallback,
and the CLI. The records -> samples arithmetic itself is tests/test_cupti_clock.py's."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import flat
from typer.testing import CliRunner

from cudabench.backends.cupti_clock import KernelClockUnavailable
from cudabench.backends.fake import FAKE_GAP_NS, FAKE_KERNEL_SHARE, FakeBackend
from cudabench.cli import app
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.execution.config import ConfigError, load_config
from cudabench.measure.runner import CaseJob, Runner
from cudabench.measure.sampling import measure, measure_interleaved
from cudabench.measure.throughput import MAX_KEPT_SAMPLES, kept_samples
from cudabench.ops.discovery import discover

ONE = TimingOptions(warmup=0, min_samples=10, min_time_s=0.0, max_time_s=1.0, timer="cupti")
runner = CliRunner()
QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]


def test_a_graph_batch_gives_one_sample_a_launch_and_the_rule_counts_them():
    """3 us launches are batched (about 667 a graph): the first graph already holds the 10
    samples the rule wants, so one sample is taken, and it yields `batch` launch times."""
    backend = FakeBackend(clock=lambda name: 0.003, kernel_clock=True)
    m = measure(backend, backend.empty_call(), ONE)
    assert m.timer == "cupti" and m.method == "graph" and m.batch > 100
    assert len(m.samples_ms) == m.batch and m.events_ms == ()
    kernel_ms = int(0.003 * 1e6 * FAKE_KERNEL_SHARE) / 1e6
    assert m.median_ms == pytest.approx(kernel_ms)
    assert m.busy_ms == m.samples_ms  # one kernel a launch: span and sum agree


def test_both_measures_the_events_clock_alone_first():
    backend = FakeBackend(clock=lambda name: 0.003, kernel_clock=True)
    m = measure(backend, backend.empty_call(), dataclasses.replace(ONE, timer="both"))
    assert m.timer == "cupti" and len(m.samples_ms) == m.batch
    assert m.events_ms and all(e == pytest.approx(0.003) for e in m.events_ms)
    owned = {s for s in backend.external.values()}
    assert len(owned) == 1  # only the kernel clock's sample was tagged, not the events' run


def test_cold_samples_leave_the_flush_kernel_out():
    backend = FakeBackend(clock=lambda name: 0.2, kernel_clock=True)
    m = measure(backend, backend.empty_call(), dataclasses.replace(ONE, cold=True, min_samples=4))
    assert m.method == "single" and m.batch == 1 and len(m.samples_ms) == 4
    assert all(s == pytest.approx(0.2 * FAKE_KERNEL_SHARE) for s in m.samples_ms)
    flushes = [r for r in backend.records if r.correlation_id not in backend.external]
    assert len(flushes) >= 4  # they were there, and not counted


def test_a_multi_kernel_variant_reports_the_span_and_keeps_the_sum():
    """softmax three_pass (max, sum, normalise) at 2^20: three kernels a launch, the gaps
    between them in the span (the row's time) but not in the summed durations."""
    variants, _ = discover("softmax", [BUILTIN_KERNELS])
    three = next(v for v in variants if v.name == "three_pass")
    backend = FakeBackend(clock=lambda name: 0.03, kernel_clock=True)
    timing = dataclasses.replace(ONE, min_samples=3, timer="both")
    (row,) = Runner(backend).run_job(CaseJob(Case("softmax", (1 << 20,)), (three,), (), timing))
    assert row.status is Status.OK and row.timer == "cupti"
    each_us = int(0.03 * 1e6 * FAKE_KERNEL_SHARE / 3) / 1e3
    assert row.kernels_us == pytest.approx(3 * each_us)
    assert row.time_us == pytest.approx(3 * each_us + 2 * FAKE_GAP_NS / 1e3)
    assert row.events_us == pytest.approx(30.0) and row.samples == len(row.samples_us)


def test_interleaved_variants_each_get_their_own_launches():
    backend = FakeBackend(clock=lambda name: {"a": 0.1, "b": 0.3}.get(name, 0.2), kernel_clock=True)

    def call(name):
        def launch():
            backend._last = name

        return launch

    import contextlib

    calls = [(call("a"), contextlib.nullcontext, None), (call("b"), contextlib.nullcontext, None)]
    a, b = measure_interleaved(backend, calls, dataclasses.replace(ONE, cold=True, min_samples=3))
    assert a.median_ms == pytest.approx(0.1 * FAKE_KERNEL_SHARE)
    assert b.median_ms == pytest.approx(0.3 * FAKE_KERNEL_SHARE)


def test_without_cupti_auto_is_events_and_cupti_is_an_error():
    backend = FakeBackend(clock=lambda name: 0.2)
    m = measure(backend, backend.empty_call(), dataclasses.replace(ONE, timer="auto", cold=True))
    assert TimingOptions().timer == "events"
    assert m.timer == "events" and m.busy_ms == () and m.median_ms == pytest.approx(0.2)
    with pytest.raises(KernelClockUnavailable, match="--timer cupti: CUPTI unavailable"):
        measure(backend, backend.empty_call(), ONE)


def test_rows_keep_at_most_so_many_raw_samples():
    many = tuple(float(i) for i in range(3 * MAX_KEPT_SAMPLES + 7))
    kept = kept_samples(many)
    assert len(kept) == MAX_KEPT_SAMPLES and kept[0] == 0.0 and list(kept) == sorted(kept)
    assert kept_samples(many[:10]) == many[:10]


# ------------------------------------------------------------------ the command line


def cli(*args, cupti=True):
    env = {"CUDABENCH_BACKEND": "fake", "CUDABENCH_FAKE_CUPTI": "1" if cupti else "0"}
    return runner.invoke(app, list(args), env=env)


def only_json(tmp_path):
    (path,) = tmp_path.glob("*.json")
    return json.loads(path.read_text())


def test_run_with_the_kernel_clock(tmp_path):
    result = cli(
        "run", "reduce", "-s", "2^20", "-v", "float4", "--timer", "cupti", *QUICK, "-o", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    assert "kernel clock (CUPTI records)" in flat(result.stdout)
    doc = only_json(tmp_path)
    assert doc["meta"]["timing"]["timer"] == "cupti" and doc["meta"]["notes"] == []
    assert {r["timer"] for r in doc["rows"]} == {"cupti"}
    assert all(r["kernels_us"] and r["events_us"] is None for r in doc["rows"])


def test_both_shows_the_events_beside_and_their_difference(tmp_path):
    result = cli(
        "run", "reduce", "-s", "2^20", "-v", "float4", "--timer", "both", *QUICK, "-o", str(tmp_path)
    )
    assert result.exit_code == 0, result.output
    assert "events µs" in result.stdout and "Δ events" in result.stdout
    assert "+11%" in result.stdout  # the fake's kernels take 90% of the events' time
    assert only_json(tmp_path)["meta"]["timing"]["timer"] == "both"


def test_auto_falls_back_to_events_with_a_note(tmp_path):
    result = cli(
        "run",
        "reduce",
        "-s",
        "2^20",
        "-v",
        "float4",
        "--timer",
        "auto",
        *QUICK,
        "-o",
        str(tmp_path),
        cupti=False,
    )
    assert result.exit_code == 0, result.output
    assert "note: timer: CUDA events (CUPTI unavailable: the fake backend" in flat(result.output)
    assert "CUDA events, median" in flat(result.stdout)
    doc = only_json(tmp_path)
    assert doc["meta"]["timing"]["timer"] == "events"
    assert doc["meta"]["notes"][0].startswith("timer: CUDA events (CUPTI unavailable")
    assert {r["timer"] for r in doc["rows"]} == {"events"}


@pytest.mark.parametrize("timer", ["cupti", "both"])
def test_asking_for_cupti_where_it_cannot_start_is_one_line_and_exit_2(timer, tmp_path):
    result = cli("run", "reduce", "-s", "2^20", "--timer", timer, *QUICK, "-o", str(tmp_path), cupti=False)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"--timer {timer}: CUPTI unavailable" in lines[0]
    assert "Traceback" not in result.output and not list(tmp_path.glob("*.json"))


def test_an_unknown_timer_is_one_line_and_exit_2():
    result = cli("run", "reduce", "-s", "2^20", "--timer", "cuptii")
    assert result.exit_code == 2 and "did you mean cupti?" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_config_names_its_clock_and_a_bad_one_by_line(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("op: reduce\nshapes: [2^20]\ntiming:\n  cold: true\n  timer: events\n")
    assert load_config(good).timing.timer == "events"
    bad = tmp_path / "bad.yaml"
    bad.write_text("op: reduce\nshapes: [2^20]\ntiming:\n  cold: true\n  timer: fast\n")
    with pytest.raises(
        ConfigError,
        match=r"bad.yaml:5: timing.timer must be one of auto, "
        "cupti, events, both, not 'fast'",
    ):
        load_config(bad)


def test_the_default_clock_is_events_and_starts_no_cupti(tmp_path):
    result = cli("run", "reduce", "-s", "2^20", "-v", "float4", *QUICK, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    doc = only_json(tmp_path)
    assert doc["meta"]["timing"]["timer"] == "events" and doc["meta"]["notes"] == []
    assert {r["timer"] for r in doc["rows"]} == {"events"} and "note: timer" not in result.output
    auto = cli(
        "run", "reduce", "-s", "2^20", "-v", "float4", "--timer", "auto", *QUICK, "-o", str(tmp_path / "auto")
    )
    assert auto.exit_code == 0 and only_json(tmp_path / "auto")["meta"]["timing"]["timer"] == "cupti"


def test_compare_will_not_judge_an_events_run_against_a_cupti_run(tmp_path):
    for timer in ("events", "cupti"):
        result = cli(
            "run",
            "reduce",
            "-s",
            "2^20",
            "-v",
            "float4",
            "--timer",
            timer,
            *QUICK,
            "-o",
            str(tmp_path / timer),
        )
        assert result.exit_code == 0, result.output
    (a,), (b,) = (list((tmp_path / t).glob("*.json")) for t in ("events", "cupti"))
    shown = cli("compare", str(a), str(b), "--json")
    assert shown.exit_code == 0
    (pair,) = [p for p in json.loads(shown.stdout) if p["variant"] == "float4"]
    assert pair["verdict"] == "NOT_COMPARABLE"
    assert pair["mismatch"] == [{"key": "timer", "a": "events", "b": "cupti"}]


def test_tune_ranks_configurations_by_the_kernel_clock(tmp_path):
    out = tmp_path / "res"
    env = {
        "CUDABENCH_BACKEND": "fake",
        "CUDABENCH_FAKE_CUPTI": "1",
        "CUDABENCH_TUNING": str(tmp_path / "tuning.json"),
    }
    result = runner.invoke(
        app,
        [
            "tune",
            "reduce",
            "-v",
            "float4",
            "-s",
            "64x129",
            "-p",
            "WARP_ROW_BYTES=16",
            "--timer",
            "cupti",
            "--no-save",
            "-o",
            str(out),
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert "kernel clock (CUPTI records)" in flat(result.stdout)
    doc = only_json(out)
    assert doc["meta"]["timing"]["timer"] == "cupti"
    assert {r["timer"] for r in doc["rows"] if r["status"] == "OK"} == {"cupti"}


def test_the_python_api_takes_the_clock(tmp_path, monkeypatch):
    import cudabench

    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    monkeypatch.setenv("CUDABENCH_FAKE_CUPTI", "1")
    df = cudabench.run(
        "reduce",
        shapes=["2^12"],
        variants=["float4"],
        output=tmp_path,
        timer="cupti",
        min_samples=2,
        min_time_s=0.0,
        max_time_s=0.01,
        warmup=0,
    )
    assert set(df["timer"]) == {"cupti"} and df["kernels_us"].notna().all()
    m = cudabench.timeit(lambda: None, min_samples=3, min_time_s=0.0, warmup=0, backend="fake", timer="auto")
    from cudabench.api.clock import _backend

    fake = _backend("fake", 0)  # the process's one fake, made by whichever test came first
    assert m.timer == ("events" if fake.kernel_clock_error() else "cupti")
    assert len(m.samples_ms) >= 3
    from cudabench.execution.sweep import SweepError

    with pytest.raises(SweepError, match="timer 'ncu'"):
        cudabench.timeit(lambda: None, backend="fake", timer="ncu")


def test_a_variant_of_very_many_blocks_timed_by_the_kernel_clock_is_flagged():
    """A grid of 100,000 blocks or more timed by the kernel clock carries the note; fewer
    blocks, or the events clock, do not (a sigmoid at a block of one thread: a block an
    element)."""
    from cudabench.core.records import KernelVariant, Launch

    one = KernelVariant(
        "sigmoid", "tiny", "/k/tiny.cu", (Launch("sigmoid_naive", 1, "elements"),), "a block an element"
    )
    backend = FakeBackend(clock=lambda name: 0.2, kernel_clock=True)
    small, large = (
        Runner(backend).run_job(CaseJob(Case("sigmoid", (n,)), (one,), (), ONE))[0] for n in (99_999, 100_000)
    )
    assert small.status is Status.OK and "CUPTI's tracing" not in small.notes
    assert "a grid of 100,000 blocks: CUPTI's tracing slowed such kernels" in large.notes
    events = Runner(FakeBackend(clock=lambda name: 0.2)).run_job(
        CaseJob(Case("sigmoid", (100_000,)), (one,), (), dataclasses.replace(ONE, timer="events"))
    )[0]
    assert "CUPTI" not in events.notes
