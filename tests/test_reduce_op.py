import re

import numpy as np
import pytest

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.core.names import UnknownName
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import KernelVariant, Launch
from cudabench.ops.protocol import check_output
from cudabench.ops.reductions import WARP_ROW_BYTES, segments
from cudabench.ops.registry import get_op

OP = get_op("reduce")
WARP_ROWS = WARP_ROW_BYTES // 4  # float32


def test_warp_rows_matches_the_device_default():
    text = (BUILTIN_KERNELS / "common" / "reduce.cuh").read_text()
    found = re.search(r"#define WARP_ROW_BYTES (\d+)", text)
    assert int(found.group(1)) == WARP_ROW_BYTES  # / itemsize: 4 rows a warp, 8 in 16-bit
    assert segments(800, 128, 256, wave=660, itemsize=2).grid == segments(400, 128, 256, wave=660).grid
    assert segments(800, 128, 256, wave=660, warp_row_bytes=32).grid == segments(400, 128, 256, wave=660).grid


def test_short_rows_get_warps_and_cover_every_row():
    g = segments(442367, 129, 256, wave=660)
    assert g.scalars == (32, 1)
    assert g.grid * (256 // 32) * WARP_ROWS >= 442367
    assert (g.grid - 1) * (256 // 32) * WARP_ROWS < 442367


def test_long_rows_split_into_at_most_a_wave():
    g = segments(1, 1 << 30, 256, wave=660)
    assert g.scalars == (256, 660) and g.grid == 660
    assert g.workspace == {"partials": (660, "float32"), "counters": (1, "uint32")}
    small = segments(1, 1 << 20, 256, wave=660)
    assert small.scalars[1] == (1 << 20) // (256 * 64)  # 64 elements a thread at least
    one = segments(1, 1025, 256, wave=660)
    assert one.scalars == (256, 1) and one.grid == 1


def test_many_long_rows_get_one_block_each():
    g = segments(5000, 4096, 256, wave=660)
    assert g.scalars == (256, 1) and g.grid == 5000


def test_geometry_rejects_unknown_rule():
    variant = KernelVariant("reduce", "v", "k.cu", (Launch("e", 256, "diagonal"),), "x")
    with pytest.raises(ValueError, match="unknown grid rule 'diagonal'"):
        OP.geometry(variant.launches[0], variant, (10,), FAKE_DEVICE, 4)


def test_requirements_make_n_a():
    variant = KernelVariant(
        "reduce",
        "v",
        "k.cu",
        (Launch("e", 256, "segments"),),
        "x",
        requires=(("cols_multiple_of", 4), ("max_cols", 1000)),
    )
    assert OP.unmet(variant, (10, 128)) is None
    assert "cols % 4" in OP.unmet(variant, (10, 129))
    assert "cols <= 1000" in OP.unmet(variant, (4096,))


def test_bytes_moved_counts_input_once_and_output_once():
    assert OP.bytes_moved((442368, 128)) == 4 * 442368 * 128 + 4 * 442368
    assert OP.bytes_moved((1 << 30,)) == 4 * (1 << 30) + 4


def test_inputs_are_random_signed_and_fresh():
    (a,) = OP.make_inputs(np, (64, 100), seed=1)
    (b,) = OP.make_inputs(np, (64, 100), seed=2)
    assert a.dtype == np.float32 and a.shape == (64, 100)
    assert a.min() < -0.5 and a.max() > 0.5 and not np.array_equal(a, b)
    (flat,) = OP.make_inputs(np, (1000,), seed=1)
    assert flat.shape == (1000,)


@pytest.mark.parametrize("shape", [(442367 // 1000, 129), (1000003,), (3, 5)])
def test_tolerance_passes_float32_sums_and_catches_a_dropped_element(shape):
    (x,) = OP.make_inputs(np, shape, seed=3)
    ref, tol = OP.expected(np, (x,))
    good = x.sum(axis=-1, dtype=np.float32).reshape(-1)
    assert check_output(np, good, ref, tol).ok
    serial = np.array([np.float32(0)] * good.size).reshape(good.shape)
    for i, row in enumerate(x.reshape(-1, x.shape[-1])):  # one atomicAdd after another
        acc = np.float32(0)
        for v in row[: min(len(row), 5000)]:
            acc = np.float32(acc + v)
        serial[i] = acc + row[5000:].sum(dtype=np.float32)
    assert check_output(np, serial, ref, tol).ok
    if x.shape[-1] <= 10_000:
        dropped = (x[..., :-1].sum(axis=-1, dtype=np.float32)).reshape(-1)
        check = check_output(np, dropped, ref, tol)
        assert not check.ok and "outputs wrong" in check.describe()


def test_nan_never_passes():
    ref = np.zeros(3)
    tol = np.ones(3)
    check = check_output(np, np.array([0.0, np.nan, 0.0], dtype=np.float32), ref, tol)
    assert not check.ok and check.where == 1 and check.wrong == 1


def test_unknown_op_suggests():
    with pytest.raises(UnknownName, match="did you mean reduce"):
        get_op("reduc")


def test_every_builtin_kernel_has_a_geometry_on_a_typical_shape():
    """Each op knows the grid rule of every built-in variant (a header naming a rule the op
    lacks would only show on the GPU otherwise)."""
    from cudabench.backends.fake import FAKE_DEVICE
    from cudabench.core.paths import BUILTIN_KERNELS
    from cudabench.ops.discovery import discover
    from cudabench.ops.registry import all_ops

    shapes = {"sgemm": (256, 256, 256), "transpose": (256, 256), "gemv": (256, 256)}
    for name, op in all_ops().items():
        shape = shapes.get(name, (256, 256))
        variants, _ = discover(name, [BUILTIN_KERNELS])
        for variant in variants:
            if op.unmet(variant, shape) is not None:
                continue
            for launch in variant.launches:
                geometry = op.geometry(launch, variant, shape, FAKE_DEVICE, 4)
                assert geometry.grid and geometry.block, (name, variant.name)
