"""What a sample times, without a GPU (issue 46, item 13: three timing bugs no test saw): the
CuPy backend's samplers (backends/cupy_timing.py) driven with CuPy stood in for by a scripted
device whose clock moves only when captured or launched work runs; and the spread statistic
with enough samples that (p90 - p10) is not (max - min)."""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest

from cudabench.backends.base import FLUSH, LAUNCH, SPIN, StepLog
from cudabench.backends.fake import FAKE_DEVICE
from cudabench.core.timing import Measurement

cupy_timing = pytest.importorskip("cudabench.backends.cupy_timing")  # imports cupy (no GPU needed)

LAUNCH_MS = 2.0  # what one launch of the call under test takes on the scripted device


class Device:
    """CuPy as the samplers use it, scripted: arrays are sizes, kernels record their launches,
    a stream can capture, events read a clock that only work moves."""

    def __init__(self):
        self.now = 0.0
        self.capturing = None  # the launches being captured into a graph
        self.launches = []  # (kernel name, grid, block, args) of every raw kernel launched
        self.float32 = np.float32
        self.cuda = types.SimpleNamespace(
            Event=self.Event,
            get_elapsed_time=lambda start, end: end.at - start.at,
            runtime=types.SimpleNamespace(deviceGetAttribute=lambda attribute, device: 1_980_000),
        )

    def zeros(self, n, dtype=None):
        return types.SimpleNamespace(size=int(n), nbytes=4 * int(n))

    def RawKernel(self, source, name):  # noqa: N802 - CuPy's name
        def launch(grid, block, args):
            self.launches.append((name, grid, block, args))

        return launch

    def Event(self):  # noqa: N802 - CuPy's name
        device = self

        class Event:
            at = 0.0

            def record(self, stream):
                self.at = device.now

            def synchronize(self):
                pass

        return Event()

    def run(self, work):
        """Work launched now, or captured into the graph being made."""
        if self.capturing is not None:
            self.capturing.append(work)
        else:
            work()


class Backend:
    """What the samplers need of CupyBackend: its device, stream, step log and device info."""

    def __init__(self, device):
        self.device = types.SimpleNamespace(id=0)
        self.step_log = None
        fake = device

        class Stream:
            def begin_capture(self):
                fake.capturing = []

            def end_capture(self):
                captured, fake.capturing = fake.capturing, None

                class Graph:
                    def upload(self, stream):
                        pass

                    def launch(self, stream):
                        for work in captured:
                            work()

                return Graph()

        self.stream = Stream()

    def device_info(self):
        return FAKE_DEVICE

    def synchronize(self):
        pass


@pytest.fixture
def scripted(monkeypatch):
    device = Device()
    monkeypatch.setattr(cupy_timing, "cp", device)
    calls = []

    def call():
        def work():
            device.now += LAUNCH_MS

        calls.append(device.capturing is not None)  # captured, or run at once
        device.run(work)

    return device, cupy_timing.Samplers(Backend(device)), call, calls


def test_a_graph_holds_batch_launches_and_a_sample_is_its_time_over_batch(scripted):
    device, samplers, call, calls = scripted
    sampler = samplers.make(call, 7, False, contextlib.nullcontext, None)
    assert (sampler.method, sampler.batch) == ("graph", 7)
    assert calls.count(True) == 7  # captured: seven launches in the graph
    assert [sampler() for _ in range(3)] == [LAUNCH_MS] * 3  # 14 ms a replay, over 7


def test_a_loop_sample_runs_batch_launches_and_divides_by_them(scripted, monkeypatch):
    device, samplers, call, calls = scripted

    def cannot(*args):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(type(samplers.backend.stream), "begin_capture", cannot)
    sampler = samplers.make(call, 5, False, contextlib.nullcontext, None)
    assert (sampler.method, sampler.batch) == ("loop", 5)
    calls.clear()
    assert sampler() == LAUNCH_MS and calls == [False] * 5


def test_a_cold_sample_flushes_twice_the_l2_then_times_one_launch(scripted):
    """The flush reads a buffer of twice the L2 (all of it: count float4s of 16 bytes), on
    every SM, before every cold sample, outside the events."""
    device, samplers, call, calls = scripted
    samplers.backend.step_log = StepLog()
    sampler = samplers.make(call, 1, True, contextlib.nullcontext, None)
    assert (sampler.method, sampler.batch) == ("single", 1)
    samplers.backend.step_log = StepLog()
    device.launches.clear()
    assert [sampler() for _ in range(3)] == [LAUNCH_MS] * 3
    flushes = [launch for launch in device.launches if launch[0] == "cudabench_flush"]
    assert len(flushes) == 3 and all(steps[0] == FLUSH for steps in samplers.backend.step_log.samples)
    _, grid, block, (buffer, count, sink) = flushes[0]
    l2 = FAKE_DEVICE.l2_bytes
    assert 16 * int(count) >= 2 * l2, f"the flush reads {16 * int(count) / l2:g}x the L2"
    assert buffer.nbytes >= 16 * int(count)  # and no further than its buffer
    assert grid[0] >= FAKE_DEVICE.sm_count and block == (256,)


def test_a_hot_single_launch_spins_then_times_the_launch_alone(scripted):
    device, samplers, call, calls = scripted
    sampler = samplers.make(call, 1, False, contextlib.nullcontext, None)
    samplers.backend.step_log = StepLog()
    assert sampler() == LAUNCH_MS
    assert samplers.backend.step_log.samples == [[SPIN, LAUNCH]]


def test_the_spread_is_p90_minus_p10_over_the_median_not_the_range():
    """With 5 samples p10 and p90 are the min and the max; with 21 they are the 3rd and the
    19th: one outlier at each end does not widen the spread."""
    samples = [10.0 + 0.1 * i for i in range(19)] + [0.5, 500.0]  # 19 close, 2 far off
    m = Measurement(samples_ms=tuple(samples), batch=1, method="single")
    s = sorted(samples)
    assert m.median_ms == s[10]
    assert m.spread == pytest.approx((s[18] - s[2]) / s[10])
    assert m.spread < 0.2 < (max(samples) - min(samples)) / m.median_ms
    assert Measurement(samples_ms=(2.0,) * 21, batch=1, method="single").spread == 0.0
