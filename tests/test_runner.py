"""The runner end to end through the fake backend: every failure becomes a row."""

import numpy as np
import pytest

from cudabench.backends.base import KernelCrash
from cudabench.backends.fake import FakeBackend
from cudabench.backends.fake_kernels import emulator
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, KernelVariant, Launch, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.ops.discovery import discover

QUICK = TimingOptions(warmup=1, min_samples=3, min_time_s=0.0, max_time_s=1.0)


def variant(name, entry=None, **kw):
    return KernelVariant(
        "reduce", name, f"/k/{name}.cu", (Launch(entry or name, 256, "segments"),), "test", **kw
    )


def job(shape, *variants, baselines=("cupy",)):
    return CaseJob(Case("reduce", shape), tuple(variants), baselines, QUICK)


def store_sum(grid, block, x, out, *rest):
    out[...] = x.sum(axis=-1, dtype=np.float32)


def drop_tail(grid, block, x, out, *rest):
    out[...] = x[..., :-1].sum(axis=-1, dtype=np.float32)


def write_nothing(grid, block, x, out, *rest):
    pass


def crash(grid, block, *args):
    raise KernelCrash("cudaErrorIllegalAddress", "an illegal memory access was encountered")


def test_builtin_variants_all_ok_with_speedups():
    from cudabench.execution.sweep import with_speedups

    variants, _ = discover("reduce", [BUILTIN_KERNELS])
    backend = FakeBackend()
    rows = with_speedups(Runner(backend).run_job(job((64, 127), *variants)), ("cupy",))
    assert [r.status for r in rows] == [Status.OK] * (len(variants) + 1)
    base = rows[-1]
    assert base.variant == "cupy" and base.is_baseline and base.speedup == pytest.approx(1.0)
    float4 = next(r for r in rows if r.variant == "float4")
    assert float4.speedup == pytest.approx(base.time_us / float4.time_us)
    assert float4.gbps == pytest.approx(float4.bytes_moved / (float4.time_us * 1e-6) / 1e9)
    assert float4.pct_peak == pytest.approx(100 * float4.gbps / backend.device_info().dram_peak_gbps)


def test_every_failure_is_a_row_and_the_run_goes_on():
    backend = FakeBackend(
        kernels={"good": store_sum, "drop": drop_tail, "none": write_nothing, "boom": crash}
    )
    variants = [
        variant("good"),
        variant("drop"),
        variant("none"),
        variant("boom"),
        variant("ghost"),
        variant("picky", "good", requires=(("cols_multiple_of", 4),)),
    ]
    rows = {r.variant: r for r in Runner(backend).run_job(job((16, 129), *variants))}
    assert rows["good"].status is Status.OK and rows["good"].time_us
    assert rows["drop"].status is Status.FAIL and rows["drop"].time_us is None
    assert "outputs wrong" in rows["drop"].error and rows["drop"].max_abs_err > rows["drop"].tolerance
    assert rows["none"].status is Status.FAIL and rows["none"].max_abs_err == float("inf")
    assert rows["boom"].status is Status.CRASH and "cudaErrorIllegalAddress" in rows["boom"].error
    assert rows["ghost"].status is Status.COMPILE_ERROR
    assert rows["picky"].status is Status.N_A and "cols % 4" in rows["picky"].error
    assert rows["cupy"].status is Status.OK


def test_a_wrong_result_after_timing_is_caught():
    calls = {"n": 0}

    def goes_bad(grid, block, x, out, *rest):
        calls["n"] += 1
        out[...] = x.sum(axis=-1, dtype=np.float32) + (1.0 if calls["n"] > 1 else 0.0)

    rows = Runner(FakeBackend(kernels={"flaky": goes_bad})).run_job(job((8, 40), variant("flaky")))
    assert rows[0].status is Status.FAIL and rows[0].error.startswith("after timing")


def test_zero_init_variants_start_from_zero_every_launch():
    def accumulate(grid, block, x, out, *rest):
        out += x.sum(axis=-1, dtype=np.float32)

    backend = FakeBackend(kernels={"acc": accumulate})
    rows = Runner(backend).run_job(job((8, 40), variant("acc", init="zero")))
    assert rows[0].status is Status.OK  # without the memset the poison (NaN) would stay
    no_init = Runner(backend).run_job(job((8, 40), variant("acc")))
    assert no_init[0].status is Status.FAIL


def test_shape_too_big_for_free_memory_is_skipped():
    backend = FakeBackend(free_bytes=1 << 20)
    rows = Runner(backend).run_job(job((1 << 20,), variant("float4", "reduce_sum_float4")))
    assert [r.status for r in rows] == [Status.SKIPPED, Status.SKIPPED]
    assert "GB of GPU memory" in rows[0].error


def test_out_of_memory_while_preparing_is_skipped_with_the_bytes(monkeypatch):
    from cudabench.ops.registry import get_op

    reduce_class = type(get_op("reduce"))

    class OutOfMemoryError(Exception):  # CuPy's name for it
        pass

    def no_room(self, xp, shape, seed):
        raise OutOfMemoryError("Out of memory allocating 4,294,967,296 bytes")

    monkeypatch.setattr(reduce_class, "make_inputs", no_room)
    rows = Runner(FakeBackend()).run_job(job((8, 64), variant("float4", "reduce_sum_float4")))
    assert [r.status for r in rows] == [Status.SKIPPED, Status.SKIPPED]
    assert "4,294,967,296 bytes" in rows[0].error


def test_a_broken_baseline_is_an_error_row():
    backend = FakeBackend()
    rows = Runner(backend).run_job(
        job((8, 8), variant("float4", "reduce_sum_float4"), baselines=("cupy", "nosuch"))
    )
    assert rows[-1].variant == "nosuch" and rows[-1].status is Status.ERROR


def test_observer_sees_every_row():
    seen = []

    class Watch:
        def started(self, case, name):
            seen.append(("start", name))

        def finished(self, row):
            seen.append(("done", row.variant))

    Runner(FakeBackend(), Watch()).run_job(job((4, 4), variant("float4", "reduce_sum_float4")))
    assert seen == [("start", "float4"), ("done", "float4"), ("start", "cupy"), ("done", "cupy")]


def test_nvtx_ranges_hold_the_variants_launches_and_nothing_else(monkeypatch):
    import contextlib

    import cudabench.measure.prepare as prepare_module
    import cudabench.measure.problem as problem_module
    import cudabench.measure.runner as runner_module

    path: list[str] = []
    seen = {"launch": set(), "check": set()}

    @contextlib.contextmanager
    def fake_range(name):
        path.append(name)
        yield
        path.pop()

    real_check = problem_module.check_output

    def check(*args):
        seen["check"].add(tuple(path))
        return real_check(*args)

    class Recording(FakeBackend):
        def launch(self, function, grid, block, args, shared=0):
            seen["launch"].add(tuple(path))
            super().launch(function, grid, block, args, shared)

    for module in (runner_module, prepare_module):  # the op's range, the variant's ranges
        monkeypatch.setattr(module, "nvtx_range", fake_range)
    monkeypatch.setattr(problem_module, "check_output", check)
    Runner(Recording()).run_job(job((8, 129), variant("float4", "reduce_sum_float4")))
    assert seen["launch"] == {("reduce", "float4", "8x129", "float32")}
    assert seen["check"] == {("reduce",)}


def test_profile_mode_puts_exactly_one_call_in_each_range(monkeypatch):
    import contextlib

    import cudabench.measure.prepare as prepare_module
    import cudabench.measure.runner as runner_module

    path: list[str] = []
    launches: list[tuple[str, ...]] = []

    @contextlib.contextmanager
    def fake_range(name):
        path.append(name)
        yield
        path.pop()

    class Recording(FakeBackend):
        def launch(self, function, grid, block, args, shared=0):
            launches.append(tuple(path))
            super().launch(function, grid, block, args, shared)

    for module in (runner_module, prepare_module):
        monkeypatch.setattr(module, "nvtx_range", fake_range)
    timing = TimingOptions(warmup=3)
    rows = Runner(Recording(), profile=True).run_job(
        CaseJob(Case("reduce", (8, 129)), (variant("float4", "reduce_sum_float4"),), (), timing)
    )
    (row,) = rows
    assert row.status is Status.OK and row.method == "ncu" and row.time_us is None
    inside = [p for p in launches if len(p) == 4]
    assert inside == [("reduce", "float4", "8x129", "float32")]  # one call in its range
    assert len(launches) == 1 + 3 + 1  # validation and warm-up outside it


def test_profile_mode_fails_a_wrong_profiled_call():
    calls = {"n": 0}

    def right_then_wrong(grid, block, x, out, *rest):
        calls["n"] += 1
        (store_sum if calls["n"] == 1 else drop_tail)(grid, block, x, out)

    backend = FakeBackend(kernels={"k": right_then_wrong})
    (row,) = Runner(backend, profile=True).run_job(job((4, 64), variant("k"), baselines=()))
    assert row.status is Status.FAIL and row.error.startswith("profiled call:")


def test_sanity_notes_flag_cache_resident_and_impossible_rows():
    from cudabench.backends.fake import FAKE_DEVICE
    from cudabench.measure.throughput import sanity_notes

    hot, cold = TimingOptions(), TimingOptions(cold=True)
    assert "fits in L2" in sanity_notes(500.0, 4 << 20, FAKE_DEVICE, hot)
    assert sanity_notes(500.0, 4 << 20, FAKE_DEVICE, cold) == ""
    assert sanity_notes(4000.0, 4 << 30, FAKE_DEVICE, hot) == ""
    assert "above the DRAM peak" in sanity_notes(9000.0, 4 << 30, FAKE_DEVICE, cold)
    rows = Runner(FakeBackend()).run_job(job((8, 129), variant("float4", "reduce_sum_float4")))
    assert all("fits in L2" in r.notes for r in rows)


def interleave_job(shape, *variants, **timing):
    options = TimingOptions(
        warmup=1, min_samples=3, min_time_s=0.0, max_time_s=1.0, interleave=True, **timing
    )
    return CaseJob(Case("reduce", shape), tuple(variants), (), options)


def test_interleaved_samples_alternate_and_rows_match_sequential():
    backend = FakeBackend(kernels={"a": store_sum, "b": store_sum, "drop": drop_tail})
    rows = Runner(backend).run_job(interleave_job((8, 129), variant("a"), variant("drop"), variant("b")))
    assert [(r.variant, r.status) for r in rows] == [
        ("a", Status.OK),
        ("drop", Status.FAIL),
        ("b", Status.OK),
    ]
    assert all(r.samples == 3 for r in rows if r.status is Status.OK)
    # after each one's validation, warm-up and pilot launches: samples taken in turn
    assert backend.launched[-6:] == ["a", "b", "a", "b", "a", "b"]
    sequential = FakeBackend(kernels={"a": store_sum, "b": store_sum})
    Runner(sequential).run_job(job((8, 129), variant("a"), variant("b"), baselines=()))
    assert sequential.launched[-3:] == ["b", "b", "b"]


def test_interleaved_crash_marks_every_timed_row():
    calls = {"n": 0}

    def crash_later(grid, block, x, out, *rest):
        calls["n"] += 1
        if calls["n"] > 3:  # the validation and warm-up pass, a later launch crashes
            raise KernelCrash("cudaErrorLaunchFailure")
        store_sum(grid, block, x, out)

    backend = FakeBackend(kernels={"ok": store_sum, "late": crash_later})
    rows = Runner(backend).run_job(interleave_job((8, 8), variant("ok"), variant("late")))
    assert [r.status for r in rows] == [Status.CRASH, Status.CRASH]
    assert all("cudaErrorLaunchFailure" in r.error for r in rows)


def test_interleave_falls_back_to_sequential_when_memory_is_short():
    from cudabench.ops.registry import get_op

    OP = get_op("reduce")

    backend = FakeBackend(
        kernels={"a": store_sum, "b": store_sum}, free_bytes=OP.device_bytes((8, 8)) + 1
    )  # one at a time fits
    rows = Runner(backend).run_job(interleave_job((8, 8), variant("a"), variant("b")))
    assert [r.status for r in rows] == [Status.OK, Status.OK]
    assert backend.launched[-3:] == ["b", "b", "b"]


def test_rows_near_the_launch_floor_are_flagged_with_the_floor():
    backend = FakeBackend(clock=lambda name: {"empty": 0.002}.get(name, 0.003))
    (row,) = Runner(backend).run_job(job((8,), variant("float4", "reduce_sum_float4"), baselines=()))
    assert row.floor_us == pytest.approx(2.0)
    assert "within 2x of the launch floor (2.0 us)" in row.notes
    slow = FakeBackend(clock=lambda name: {"empty": 0.002}.get(name, 0.05))
    (row,) = Runner(slow).run_job(job((8,), variant("float4", "reduce_sum_float4"), baselines=()))
    assert "launch floor" not in row.notes


def test_clocks_and_slowdowns_over_the_samples_are_recorded():
    from cudabench.backends.fake_nvml import FakeGauge

    first = iter([1980])  # the watch's first reading; the clock drops after it
    gauge = FakeGauge(sm_mhz=lambda t: next(first, 1410), slowdowns=range(1, 400))
    backend = FakeBackend(gauge=gauge)
    (row,) = Runner(backend).run_job(job((8, 64), variant("float4", "reduce_sum_float4"), baselines=()))
    assert row.sm_mhz == (1980, 1410) and row.mem_mhz == (2619, 2619)
    assert row.sm_mhz_min == 1410 and row.temp_c == (40, 40)
    assert row.throttle == "sw power cap"
    assert row.throttled_samples == row.samples and row.dropped_samples == 0
    assert "every sample taken while the GPU was slowed (sw power cap)" in row.notes


def test_a_multi_kernel_variants_launches_share_one_grid():
    """Kernels of 256 and 1024 threads (8 and 2 resident blocks a fake SM) pass partials
    through the workspace: the split rule must give both the same number of blocks."""
    grids = []

    def stats(grid, block, x, out, partials, rows, cols, chunks):
        grids.append((grid, int(chunks)))

    def norm(grid, block, x, out, partials, rows, cols, chunks):
        grids.append((grid, int(chunks)))
        from cudabench.ops.registry import get_op

        emulator(get_op("softmax"))(grid, block, x, out, partials, rows, cols, chunks)

    two = KernelVariant(
        "softmax", "two", "/k/two.cu", (Launch("stats", 256, "split"), Launch("norm", 1024, "split")), "test"
    )
    backend = FakeBackend(kernels={"stats": stats, "norm": norm})
    (row,) = Runner(backend).run_job(CaseJob(Case("softmax", (1 << 22,)), (two,), (), QUICK))
    assert row.status is Status.OK
    assert set(grids) == {(132 * 2, 132 * 2)}  # 2 blocks of 1024 a fake SM


def test_every_job_makes_its_backends_stream_current_first():
    """A backend made later in the thread (cudabench.timeit, a second Runner) takes the current
    stream; each job takes it back before CuPy does any of its work."""
    backend = FakeBackend(kernels={"good": store_sum})
    runner = Runner(backend)
    for _ in range(2):
        rows = runner.run_job(job((16, 129), variant("good")))
        assert rows[0].status is Status.OK
    assert backend.activations == 2


def test_a_cold_sample_on_the_fake_backend_flushes_before_its_launch():
    """The fake backend builds its samples from base.sample_steps as the CuPy backend does:
    a cold run records a flush before every sample's launch, a hot single launch none (so a
    dropped flush fails here, without a GPU)."""
    from cudabench.backends.base import StepLog

    variants, _ = discover("reduce", [BUILTIN_KERNELS])
    float4 = [v for v in variants if v.name == "float4"]
    for cold in (True, False):
        backend = FakeBackend()
        backend.step_log = StepLog()
        timing = TimingOptions(warmup=0, min_samples=3, min_time_s=0.0, max_time_s=0.01, cold=cold)
        rows = Runner(backend).run_job(CaseJob(Case("reduce", (64, 127)), tuple(float4), (), timing))
        assert rows[0].status is Status.OK
        samples = backend.step_log.samples
        assert len(samples) >= 3 and backend.flushes == (len(samples) if cold else 0)
        assert all(s[-1] == "launch" and (s.count("flush") == 1) == cold for s in samples)
