"""Issue 32 item 17: near-miss planted errors per op and dtype, without a GPU (NumPy). Each
op's float64 reference and tolerance (as the runner builds them: the op's tolerance plus the
dtype's rounding, dtypes.output_tolerance) judged by ops.base.check_output: an output off by
twice the tolerance fails, one off by half of it passes. The tolerance is pinned (its median
at a fixed shape and seed, GOLDEN): a validator made 3x or 10x looser, or softmax's 1000x
looser, lets the 2x error through and fails here. Ops whose outputs must be exact (a max, a
copy, a transpose, relu) are pinned at exact: one ulp off fails."""

import numpy as np
import pytest

from cudabench.core.dtypes import get_dtype, output_tolerance
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.ops.discovery import discover
from cudabench.ops.protocol import check_output
from cudabench.ops.registry import all_ops, get_op

SHAPES = {
    "reduce": (64, 1000),
    "reduce_max": (64, 1000),
    "reduce_scale": (64, 1000),
    "softmax": (16, 512),
    "add": (5000,),
    "sigmoid": (5000,),
    "relu": (5000,),
    "transpose": (96, 64),
    "gemv": (96, 128),
    "sgemm": (64, 48, 32),
    "stream_read": (5000,),
    "stream_write": (5000,),
    "stream_copy": (5000,),
    "stream_triad": (5000,),
    "fma": (4096,),
}
EXACT = 1e-29  # a tolerance at or below this is "must be exact" (the ops' floor is 1e-30)


def _problem(op_name, dtype_name):
    op, dtype = get_op(op_name), get_dtype(dtype_name)
    inputs = op.make_inputs(np, SHAPES[op_name], 0)
    if dtype_name != "float32":
        inputs = tuple(x.astype(dtype.array_type()) for x in inputs)
    ref, tol = op.expected(np, inputs)  # as the runner asks it (reference and tolerance)
    return ref.reshape(-1), output_tolerance(np, dtype, ref, tol).reshape(-1)


def _cases():
    return [
        (name, d)
        for name in all_ops()
        for d in sorted({d for v in discover(name, [BUILTIN_KERNELS])[0] for d in v.dtypes})
    ]


GOLDEN = {  # the median tolerance at SHAPES, seed 0 (None: exact)
    ("reduce", "bfloat16"): 0.04943031652895146,
    ("reduce", "float16"): 0.0063344401087109484,
    ("reduce", "float32"): 0.00017893552824148456,
    ("reduce_max", "bfloat16"): 0.00390625,
    ("reduce_max", "float16"): 0.00048807263374328613,
    ("reduce_max", "float32"): None,
    ("reduce_scale", "bfloat16"): 0.0019532442092895508,
    ("reduce_scale", "float16"): 0.0002442896366119385,
    ("reduce_scale", "float32"): 1.19221166944947e-07,
    ("softmax", "bfloat16"): 1.1189471480313092e-06,
    ("softmax", "float16"): 1.7080792102261108e-07,
    ("softmax", "float32"): 1.1899033623923235e-09,
    ("add", "bfloat16"): 0.00925078202271834,
    ("add", "float16"): 0.001157812526798807,
    ("add", "float32"): 1.4130931447198236e-07,
    ("sigmoid", "bfloat16"): 0.0019711294104045665,
    ("sigmoid", "float16"): 0.00024684288758040424,
    ("sigmoid", "float32"): 4.81116727387548e-07,
    ("relu", "bfloat16"): 7.009506225585938e-05,
    ("relu", "float16"): 8.795410394668579e-06,
    ("relu", "float32"): None,
    ("transpose", "bfloat16"): 0.0019683837890625,
    ("transpose", "float16"): 0.00024583935737609863,
    ("transpose", "float32"): None,
    ("gemv", "bfloat16"): 0.009998419888844076,
    ("gemv", "float16"): 0.001273734225047673,
    ("gemv", "float32"): 2.9159523188105008e-05,
    ("sgemm", "float32"): 1.011652044502654e-05,
    ("stream_read", "float32"): 0.0007369815150560936,
    ("stream_write", "float32"): None,
    ("stream_copy", "float32"): None,
    ("stream_triad", "float32"): 2.3962256534559856e-07,
    ("fma", "float32"): 3.608093948059832e-07,
}


def test_every_op_and_dtype_is_pinned():
    assert sorted(GOLDEN) == sorted(_cases())


@pytest.mark.parametrize("op_name, dtype_name", sorted(GOLDEN))
def test_near_miss_planted_errors(op_name, dtype_name):
    ref, tol = _problem(op_name, dtype_name)
    finite = np.isfinite(ref)
    assert finite.any()
    golden = GOLDEN[(op_name, dtype_name)]
    if golden is None:  # exact: the right answer passes, the next float up fails
        assert (tol[finite] <= EXACT).all()
        assert check_output(np, ref.copy(), ref, tol).ok
        wrong = ref.copy()
        nonzero = np.flatnonzero(finite & (ref != 0))
        if nonzero.size:
            index = int(nonzero[0])
            wrong[index] = np.nextafter(np.float32(ref[index]), np.float32(np.inf))
        else:  # all zeros (a write of zeros): twice the floor fails, half of it passes
            index = 0
            wrong[index] = 2 * tol[index]
            near = ref.copy()
            near[index] = 0.5 * tol[index]
            assert check_output(np, near, ref, tol).ok
        assert not check_output(np, wrong, ref, tol).ok
        return
    # the planted error is scaled to the pinned tolerance: a looser validator lets 2x through
    pinned = tol * (golden / float(np.median(tol[finite])))
    signs = np.where(np.arange(ref.size) % 2, 1.0, -1.0)
    with np.errstate(invalid="ignore"):  # inf + x, for the infinities np.where then drops
        near = np.where(finite, ref + 0.5 * signs * pinned, ref)
        far = np.where(finite, ref + 2.0 * signs * pinned, ref)
    assert check_output(np, near, ref, tol).ok, "an error of half the tolerance must pass"
    missed = check_output(np, far, ref, tol)
    assert not missed.ok and missed.wrong == int(finite.sum()), (
        "an error of twice the tolerance must fail everywhere"
    )


# Issue 35: softmax's tolerance in 16 bits at the real row lengths of the 16-bit block kernels
# (4096, block_pack16; 32768, block_hybrid16), fewer rows. The kernels' own arithmetic,
# emulated in float32 (exp(x - m) as 2^(x log2e + c) against one rounded row constant c, the
# sum in float32, one reciprocal, one rounding to the dtype), passes; the same with the row sum
# accumulated in the 16-bit type, element after element as a naive kernel would, fails.
ROWS16 = [(dtype, cols) for dtype in ("bfloat16", "float16") for cols in (4096, 32768)]


def _softmax16_case(dtype_name, cols, rows=10):
    op, dtype = get_op("softmax"), get_dtype(dtype_name)
    (x,) = op.make_inputs(np, (rows, cols), 0)
    x16 = x.astype(dtype.array_type())
    ref, tol = op.expected(np, (x16,))
    return x16, ref.reshape(rows, cols), output_tolerance(np, dtype, ref, tol).reshape(rows, cols)


def _exponentials(x16):
    """The kernels' exponentials in float32: 2^(x log2e + c), c = -max log2e rounded once
    (one FFMA, then ex2)."""
    x = x16.astype(np.float32)
    log2e = np.float32(1.4426950408889634)
    c = (-x.max(axis=1, keepdims=True) * log2e).astype(np.float32)
    t = (x.astype(np.float64) * np.float64(log2e) + c).astype(np.float32)  # a fused multiply-add
    return np.exp2(t).astype(np.float32)


@pytest.mark.parametrize("dtype_name, cols", ROWS16, ids=[f"{d}-{c}" for d, c in ROWS16])
def test_a_16_bit_row_sum_fails_the_softmax_tolerance(dtype_name, cols):
    x16, ref, tol = _softmax16_case(dtype_name, cols)
    e = _exponentials(x16)
    # right: the sum in float32, one reciprocal, the product rounded once to the dtype
    inv = (np.float32(1.0) / e.sum(axis=1, keepdims=True, dtype=np.float32)).astype(np.float32)
    right = (e * inv).astype(x16.dtype)
    assert check_output(np, right, ref, tol).ok
    # planted: the row sum accumulated in the 16-bit type, in order
    total = np.zeros((e.shape[0], 1), dtype=x16.dtype)
    e16 = e.astype(x16.dtype)
    for j in range(cols):
        total = (total + e16[:, j : j + 1]).astype(x16.dtype)
    wrong = (e * (np.float32(1.0) / total.astype(np.float32))).astype(x16.dtype)
    missed = check_output(np, wrong, ref, tol)
    assert not missed.ok and missed.wrong > x16.size // 2, missed.describe()
