"""The catalogue's op modules without a GPU: inputs built to catch the seeds' bugs, references,
tolerances, grid rules, and the in-place restore."""

import dataclasses

import numpy as np
import pytest

from cudabench.backends.fake import FAKE_DEVICE, FakeBackend
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, DeviceInfo, KernelVariant, Launch, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.ops.discovery import discover
from cudabench.ops.protocol import check_output
from cudabench.ops.registry import get_op


def variant(op, name, entry, grid, block=256, **kw):
    return KernelVariant(op, name, f"/k/{name}.cu", (Launch(entry, block, grid),), "test", **kw)


@pytest.mark.parametrize("op", ["reduce", "reduce_max"])
def test_one_row_is_reduced_as_a_1d_array_with_the_same_result(op):
    """A single row of a 2-D array is reduced as 1-D (CuPy gives a 2-D row one block): the
    reference and tolerance of 1 x n are those of the same n values as one row of n."""
    from cudabench.ops.reductions import rows_of

    x = np.random.default_rng(0).standard_normal((1, 1000)).astype(np.float32)
    assert rows_of(x).shape == (1000,) and rows_of(x[:, :7].copy()).shape == (7,)
    assert rows_of(np.ones((2, 3))).shape == (2, 3) and rows_of(np.ones(5)).shape == (5,)
    spec = get_op(op)
    one, flat = spec.expected(np, (x,)), spec.expected(np, (x.reshape(-1),))
    rows = spec.expected(np, (np.vstack([x, x]),))
    assert one[0].shape == (1,) and np.array_equal(one[0], flat[0]) and np.array_equal(one[1], flat[1])
    assert np.allclose(rows[0], np.repeat(one[0], 2)) and np.allclose(rows[1], np.repeat(one[1], 2))

    class Spy(np.ndarray):  # the reductions' own arrays: 1-D for the single row
        seen: list = []

        def sum(self, *a, **k):
            Spy.seen.append(self.ndim)
            return np.asarray(self).sum(*a, **k)

        def max(self, *a, **k):
            Spy.seen.append(self.ndim)
            return np.asarray(self).max(*a, **k)

    spec.expected(np, (x.view(Spy),))
    assert Spy.seen and set(Spy.seen) == {1}, Spy.seen


def test_reduce_max_inputs_hold_negative_rows_and_infinities():
    op = get_op("reduce_max")
    (x,) = op.make_inputs(np, (30, 64), seed=1)
    assert (x[1] < 0).all() and np.isneginf(x[2]).any() and np.isposinf(x[5]).any()
    (one,) = op.make_inputs(np, (1000,), seed=1)
    assert (one < 0).all() and np.isneginf(one).any()  # a 1-D input: all negative
    ref, tol = op.expected(np, (x,))
    assert ref[5] == np.inf and (tol <= 1e-29).all()


def test_check_output_takes_equal_infinities_and_never_nan():
    ref = np.array([np.inf, -np.inf, 1.0])
    tol = np.full(3, 1e-30)
    assert check_output(np, np.array([np.inf, -np.inf, 1.0], np.float32), ref, tol).ok
    bad = check_output(np, np.array([np.inf, np.nan, 1.0], np.float32), ref, tol)
    assert not bad.ok and bad.wrong == 1 and bad.where == 1


def test_flt_min_start_is_caught_by_the_reference():
    op = get_op("reduce_max")
    (x,) = op.make_inputs(np, (30, 64), seed=2)
    ref, tol = op.expected(np, (x,))
    wrong = np.maximum(x.max(axis=-1), np.float32(np.finfo(np.float32).tiny))  # seed 001's start
    assert not check_output(np, wrong, ref, tol).ok


def test_softmax_inputs_overflow_without_the_max_subtraction():
    op = get_op("softmax")
    (x,) = op.make_inputs(np, (10, 128), seed=3)
    assert x[0].min() > 90  # shifted rows: exp(x) overflows float32
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    ref, tol = op.expected(np, (x,))
    assert not check_output(np, naive.astype(np.float32), ref, tol).ok


def test_sgemm_counts_flops_and_the_fp32_peak_depends_on_the_arch():
    op = get_op("sgemm")
    assert op.flops((4096, 4096, 4096)) == 2 * 4096**3
    h200 = FAKE_DEVICE  # 132 SMs, 1980 MHz, sm_90: 128 lanes
    assert h200.fp32_peak_gflops == pytest.approx(132 * 128 * 2 * 1.98)
    a100 = DeviceInfo("A100", "8.0", 108, 1593, 5120, 40 << 20, 80 << 30, "", "", sm_clock_mhz=1410)
    assert a100.fp32_peak_gflops == pytest.approx(108 * 64 * 2 * 1.41)


@pytest.mark.parametrize(
    "op, shape, rule, block, grid, threads",
    [
        ("transpose", (100, 33), "tile32", 256, (2, 4), (32, 8)),
        ("transpose", (100, 33), "tile64", 256, (1, 2), (32, 8)),
        ("sgemm", (300, 129, 7), "tile128", 256, (2, 3), 256),
        ("sgemm", (300, 129, 7), "tile16", 256, (9, 19), (16, 16)),
        ("gemv", (1000, 7), "warp_rows", 256, 125, 256),
        ("softmax", (1000, 64), "warp_rows4", 128, 63, 128),
        ("add", (1001,), "vec4", 256, 1, 256),
    ],
)
def test_grid_rules(op, shape, rule, block, grid, threads):
    geometry = get_op(op).geometry(
        Launch("k", block, rule), variant(op, "v", "k", rule, block), shape, FAKE_DEVICE, 4
    )
    assert geometry.grid == grid and geometry.block == threads


def test_softmax_cluster_rule_gives_each_row_a_cluster_of_blocks():
    (v,) = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == "cluster"]
    for cluster, block in ((4, 256), (8, 128)):
        configured = v.configured({"CLUSTER": cluster, "BLOCK": block})
        geometry = get_op("softmax").geometry(
            configured.launches[0], configured, (1728, 32768), FAKE_DEVICE, 4
        )
        assert (geometry.grid, geometry.block) == (1728 * cluster, block)


@pytest.mark.parametrize(
    "shape, itemsize, block, reg_packs, shared",
    [
        ((1728, 32768), 4, 512, 8, (16 - 8) * 512 * 16),  # 16 packs a thread: half in shared memory
        ((1728, 32768), 4, 256, 4, (32 - 4) * 256 * 16),  # 112 KiB: above 48, opted in
        ((1728, 32768), 2, 512, 8, 0),  # 8 packs of halves: all in registers
        ((5, 4104), 4, 512, 1, (4 - 1) * 512 * 16),  # 1026 packs: 3 a thread, rounded to 4
        ((7, 8), 2, 256, 4, 0),
    ],
)
def test_softmax_hybrid_rule_sizes_the_shared_part_of_a_row(shape, itemsize, block, reg_packs, shared):
    (v,) = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == "block_hybrid"]
    configured = v.configured({"BLOCK": block, "REG_PACKS": reg_packs})
    geometry = get_op("softmax").geometry(configured.launches[0], configured, shape, FAKE_DEVICE, 1, itemsize)
    assert (geometry.grid, geometry.block, geometry.shared_bytes) == (shape[0], block, shared)


def test_min_sm_keeps_a_variant_off_an_older_gpu():
    (v,) = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == "cluster"]
    assert dict(v.requires)["min_sm"] == 90
    assert v.unmet_on(FAKE_DEVICE) is None  # sm_90
    a100 = dataclasses.replace(FAKE_DEVICE, compute_capability="8.0")
    assert v.unmet_on(a100) == "needs sm_90 or later (this GPU is sm_80)"
    backend = FakeBackend()
    backend.device = a100
    timing = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=1.0)
    (row,) = Runner(backend).run_job(CaseJob(Case("softmax", (4, 64)), (v,), (), timing))
    assert row.status is Status.N_A and "sm_90" in row.error


def test_softmax_shared_memory_rule_says_why_a_long_row_is_n_a():
    v = variant("softmax", "smem", "k", "row_block_smem")
    assert "needs 131072 B of shared memory" in get_op("softmax").unmet(v, (2, 32768))
    assert get_op("softmax").unmet(v, (2, 4096)) is None


def test_in_place_op_gets_its_input_restored_before_every_sample():
    restores = []

    def halve(grid, block, x, rows, cols):  # an in-place kernel that is wrong if run twice
        restores.append(float(x.reshape(-1)[0]))
        x /= np.abs(x.reshape(int(rows), int(cols))).max(axis=1, keepdims=True).reshape(-1, 1)

    backend = FakeBackend(kernels={"k": halve})
    timing = TimingOptions(warmup=0, min_samples=4, min_time_s=0.0, max_time_s=1.0)
    job = CaseJob(
        Case("reduce_scale", (8, 32)), (variant("reduce_scale", "v", "k", "row_block"),), (), timing
    )
    (row,) = Runner(backend).run_job(job)
    assert row.status is Status.OK
    # validation, pilots and samples each start from the pristine input (the first element)
    first = restores[0]
    assert restores.count(first) >= 1 + 3 + 4


@pytest.mark.parametrize("shape", [(1000, 7), (3, 50)])
def test_gemv_takes_its_float64_reference_in_pieces_of_a(shape, monkeypatch):
    """cuBLAS's float64 gemv failed at 2,147,422,207 x 1 on an H200 (verify found it as an
    ERROR row of every gemv variant): the reference goes a piece of A at a time, the same
    numbers as the whole product, also where one row is longer than a piece."""
    op = get_op("gemv")
    module = __import__(type(op).__module__, fromlist=["REFERENCE_ELEMENTS"])
    a, x = op.make_inputs(np, shape, 3)
    whole, whole_tol = op.expected(np, (a, x))
    monkeypatch.setattr(module, "REFERENCE_ELEMENTS", 21)  # 3 rows of 7, or 1 row of 50
    ref, tol = op.expected(np, (a, x))
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    assert np.array_equal(ref, whole) and np.array_equal(tol, whole_tol)
    assert np.allclose(ref, a64 @ x64, rtol=0, atol=1e-12)
