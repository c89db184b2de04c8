"""A fake-backend run of a small op takes seconds by default (issue 46: about 2,000 "launches"
a row, each recomputing the reference; 6 min for a small layer-norm sweep): its clock is
scripted, so its rows stop at min_samples whatever minimum GPU time the run asks for; a row's
reference is computed once for its inputs; a Python variant is called a bounded number of
times. What the fake tests stays: every call is still made, and checked before and after
timing."""

from __future__ import annotations

import numpy as np
import pytest

from cudabench.backends.fake import FakeBackend
from cudabench.backends.fake_kernels import emulator
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.measure.sampling import PILOT_SAMPLES, sampling_options
from cudabench.ops import registry
from cudabench.ops.discovery import discover
from cudabench.ops.registry import get_op

DEFAULT = TimingOptions()  # what `cudabench run` times with: at least 0.2 s of GPU time a row
# the calls a row makes: the check before timing, the warm-up, the pilot, the samples
CALLS = 1 + DEFAULT.warmup + PILOT_SAMPLES + DEFAULT.min_samples


def builtin(op, name):
    (found,) = [v for v in discover(op, [BUILTIN_KERNELS])[0] if v.name == name]
    return found


def test_the_fakes_rows_stop_at_min_samples_by_default():
    backend = FakeBackend()
    float4 = builtin("reduce", "float4")  # 0.06 ms a launch: 98 samples of 34 to reach 0.2 s
    job = CaseJob(Case("reduce", (64, 129)), (float4,), ("cupy",), DEFAULT)
    rows = Runner(backend).run_job(job)
    assert [(r.variant, r.status, r.samples) for r in rows] == [
        ("float4", Status.OK, DEFAULT.min_samples),
        ("cupy", Status.OK, DEFAULT.min_samples),
    ]
    assert backend.launched.count("reduce_sum_float4") == CALLS
    assert sampling_options(backend, DEFAULT).min_time_s == 0.0
    # what the run asked for is kept, and a measured clock keeps its time rule
    assert rows[0].samples == DEFAULT.min_samples and DEFAULT.min_time_s == 0.2
    assert sampling_options(object(), DEFAULT) is DEFAULT  # type: ignore[arg-type]


def test_a_rows_reference_is_computed_once_for_its_inputs(monkeypatch):
    op = get_op("softmax")
    calls = []
    reference = type(op).reference

    def counted(self, xp, *inputs):
        if inputs[0].dtype == np.float64:  # the float64 reference (not the float32 yardstick)
            calls.append(1)
        return reference(self, xp, *inputs)

    monkeypatch.setattr(type(op), "reference", counted)
    job = CaseJob(Case("softmax", (64, 1000)), (builtin("softmax", "block_reg"),), ("cupyx",), DEFAULT)
    rows = Runner(FakeBackend()).run_job(job)
    assert [r.status for r in rows] == [Status.OK, Status.OK]
    # the variant: its problem's reference and the stand-in's, once for its CALLS launches;
    # the baseline: its problem's
    assert len(calls) == 3


def test_the_stand_in_computes_again_when_its_inputs_change():
    """The kept reference is the inputs' contents', not their identity: an in-place input
    left as the last call wrote it (not restored) gets that input's reference."""
    op = get_op("relu")
    run = emulator(op)
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    out = np.empty_like(x)
    np.testing.assert_array_equal(run(1, 1, x, out, 64), np.maximum(x, 0))
    x -= 0.5  # the same array, other contents
    np.testing.assert_array_equal(run(1, 1, x, out, 64), np.maximum(x, 0))


OP = """\
from cudabench.op import Op, Scalar, Tensor, elements


class Scale(Op):
    about = "out = 2 x"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("n", "long long", lambda d: d.rows * d.cols),)
    rules = {"elements": elements()}

    def reference(self, xp, x):
        return 2 * x
"""
VARIANTS = """\
import os

from cudabench.op import variant


def counted():
    with open(os.environ["SCALE_CALLS"], "a") as calls:
        calls.write("x")
    return os.path.getsize(os.environ["SCALE_CALLS"])


@variant(name="twice")
def twice(x):
    counted()
    return 2 * x


@variant(name="goes_bad")
def goes_bad(x):
    return 2 * x + (1 if counted() > 1 else 0)
"""


@pytest.fixture
def scale(tmp_path, monkeypatch):
    folder = tmp_path / "ops" / "scale"
    folder.mkdir(parents=True)
    (folder / "op.py").write_text(OP)
    (folder / "rows.py").write_text(VARIANTS)
    registry.use_ops([tmp_path / "ops"])
    monkeypatch.setenv("SCALE_CALLS", str(tmp_path / "calls"))
    return {v.name: v for v in discover("scale", [BUILTIN_KERNELS])[0]}


def test_a_python_variant_is_called_a_bounded_number_of_times(scale, tmp_path):
    (row,) = Runner(FakeBackend()).run_job(CaseJob(Case("scale", (8, 33)), (scale["twice"],), (), DEFAULT))
    assert row.status is Status.OK and row.samples == DEFAULT.min_samples
    assert (tmp_path / "calls").stat().st_size == CALLS


def test_a_python_variant_that_goes_wrong_while_timed_is_still_caught(scale):
    """The check after timing still runs on the fake, on the last timed call's output."""
    job = CaseJob(Case("scale", (8, 33)), (scale["goes_bad"],), (), DEFAULT)
    (row,) = Runner(FakeBackend()).run_job(job)
    assert row.status is Status.FAIL and row.error.startswith("after timing")
