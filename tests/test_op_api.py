# ruff: noqa: RUF012 - an op declares its rules and baselines as class attributes
"""The public op API (cudabench/op.py) without a GPU: declarations, their defaults, and the
one-line errors of a declaration that cannot serve."""

import numpy as np
import pytest

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.core.records import KernelVariant, Launch
from cudabench.op import (
    Op,
    OpDefinitionError,
    Scalar,
    Tensor,
    block_rows,
    elements,
    tiles,
    torch_call,
    uniform,
    variant,
    warp_rows,
)
from cudabench.ops.protocol import Geometry, check_output


class RmsNorm(Op):
    name = "rmsnorm"
    about = "out = x * w / sqrt(mean(x^2) + eps), along each row"
    dims = ("rows", "cols")
    ranks = (1, 2, 3)
    inputs = (Tensor("x", "rows cols"), Tensor("w", "cols", fill=uniform(0.5, 2.0)))
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", 1e-6))
    rules = {"row": block_rows(), "warp": warp_rows(), "flat": elements()}
    accumulate = "cols"
    library = {"xp": lambda x, w: x * w, "torch": torch_call(lambda x, w: x * w)}

    def reference(self, xp, x, w):
        return x * w / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6)


def launch_of(rule, block=256):
    v = KernelVariant("rmsnorm", "v", "/k/v.cu", (Launch("k", block, rule),), "t")
    return v.launches[0], v


def test_shapes_map_onto_the_dims():
    op = RmsNorm()
    op.validate()
    assert op.dim_values((4096, 8192)) == {"rows": 4096, "cols": 8192}
    assert op.dim_values((8192,)) == {"rows": 1, "cols": 8192}  # one row
    assert op.dim_values((8, 512, 4096)) == {"rows": 4096, "cols": 4096}  # leading dims fold
    assert op.tensor_shape(op.inputs[0], (8192,)) == (8192,)  # stays 1-D
    assert op.tensor_shape(op.inputs[1], (4, 8)) == (8,)
    assert op.output_shape((4, 8)) == (4, 8)
    with pytest.raises(
        ValueError,
        match=r"rmsnorm takes a 1-D \(cols\) or 2-D \(rows x cols\) "
        r"or 3-D \(folded\) shape, got 4-D",
    ):
        op.check_shape((1, 2, 3, 4))


def test_the_default_argument_list_is_inputs_outputs_then_scalars():
    op = RmsNorm()
    assert op.arg_names() == ("x", "w", "out", "rows", "cols", "eps")
    x, w = op.make_inputs(np, (3, 8), seed=1)
    out = np.empty((3, 8), np.float32)
    args = op.kernel_args((x, w), out, {}, Geometry(3, 256))
    assert args[0] is x and args[1] is w and args[2] is out
    assert [type(a) for a in args[3:]] == [np.int64, np.int64, np.float32]
    assert args[3:] == (3, 8, np.float32(1e-6))
    assert op.arg_roles()[:3] == (("input", "x"), ("input", "w"), ("output", "out"))


def test_inputs_are_seeded_and_use_their_fill():
    op = RmsNorm()
    x, w = op.make_inputs(np, (64, 100), seed=3)
    again, _ = op.make_inputs(np, (64, 100), seed=3)
    other, _ = op.make_inputs(np, (64, 100), seed=4)
    assert x.dtype == np.float32 and np.array_equal(x, again) and not np.array_equal(x, other)
    assert x.min() < -1 and x.max() > 1  # standard normal
    assert w.shape == (100,) and w.min() >= 0.5 and w.max() < 2.0


def test_bytes_and_the_default_tolerance():
    op = RmsNorm()
    assert op.bytes_read((4096, 8192), 2) == 2 * (4096 * 8192 + 8192)
    assert op.bytes_moved((4096, 8192), 2) == 2 * (2 * 4096 * 8192 + 8192)
    assert op.flops((4, 4)) is None and op.arithmetic((4, 4)) == 0
    x, w = op.make_inputs(np, (16, 4096), seed=5)
    ref, tol = op.expected(np, (x, w))
    assert ref.shape == tol.shape == (16 * 4096,)
    # a float32 computation passes; a row off by 1e-4 relative does not
    x32 = x * w / np.sqrt((x * x).mean(axis=-1, keepdims=True, dtype=np.float32) + np.float32(1e-6))
    assert check_output(np, x32.astype(np.float32), ref, tol).ok
    assert not check_output(np, (x32 * np.float32(1 + 1e-4)).astype(np.float32), ref, tol).ok


def test_requirements_come_from_the_dims():
    op = RmsNorm()
    assert {"max_cols", "min_rows", "cols_multiple_of"} <= set(op.requirements)
    v = KernelVariant(
        "rmsnorm",
        "v",
        "/k/v.cu",
        (Launch("k", 256, "row"),),
        "t",
        requires=(("cols_multiple_of", 8), ("max_cols", 1024)),
    )
    assert op.unmet(v, (4, 1024)) is None
    assert op.unmet(v, (4, 1030)) == "needs cols % 8 == 0 (cols = 1030)"
    assert op.unmet(v, (4, 2048)) == "needs cols <= 1024 (cols = 2048)"


def test_stock_rules():
    op = RmsNorm()
    assert op.geometry(*launch_of("row"), (4096, 8192), FAKE_DEVICE, 4).grid == 4096
    assert op.geometry(*launch_of("warp", 128), (1000, 64), FAKE_DEVICE, 4).grid == 250
    assert op.geometry(*launch_of("flat"), (10, 100), FAKE_DEVICE, 4).grid == 4
    with pytest.raises(
        ValueError, match=r"/k/v.cu:1: unknown grid rule 'diag' \(rmsnorm knows: row, warp, flat\)"
    ):
        op.geometry(*launch_of("diag"), (4, 4), FAKE_DEVICE, 4)

    class T(RmsNorm):
        rules = {"t": tiles(32)}

    g = T().geometry(*launch_of("t"), (100, 33), FAKE_DEVICE, 4)
    assert g.grid == (2, 4) and g.block == (32, 8)


def test_library_baselines_unpack_the_inputs_and_torch_only_when_it_imports(monkeypatch):
    from cudabench.ops import torch_baselines

    monkeypatch.setattr(torch_baselines, "available", lambda: False)
    found = RmsNorm().baselines()
    assert list(found) == ["xp"]
    assert found["xp"]((np.ones(2), np.full(2, 3.0))).tolist() == [3.0, 3.0]


def test_an_in_place_output_is_its_input():
    class Scale(Op):
        name, about, dims = "scale", "x *= 2", ("n",)
        inputs = (Tensor("x", "n"),)
        outputs = (Tensor("x", "n"),)
        scalars = (Scalar("n"),)

        def reference(self, xp, x):
            return 2 * x

    op = Scale()
    op.validate()
    assert op.in_place and op.in_place_input == 0
    assert op.arg_names() == ("x", "n") and op.arg_roles()[0] == ("inplace", "x")
    assert op.bytes_moved((10,)) == 80 and op.bytes_read((10,)) == 40
    (x,) = op.make_inputs(np, (10,), 0)
    out = x.copy()
    assert op.kernel_args((x,), out, {}, Geometry(1, 32))[0] is out


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"inputs": (Tensor("x", "rows cls"),)},
            r"tensor x names an unknown dimension 'cls' \(dims: rows, cols\)",
        ),
        ({"scalars": (Scalar("n"),)}, r"scalar n names an unknown dimension 'n'"),
        ({"scalars": (Scalar("eps", "half", 1e-3),)}, r"scalar eps has C type 'half'"),
        ({"outputs": ()}, r"declare exactly one output"),
        ({"about": ""}, r"declare about"),
        ({"args": ("x", "out", "nope")}, r"argument 'nope' is no tensor"),
        ({"accumulate": "k"}, r"accumulate names an unknown dimension 'k'"),
    ],
)
def test_a_declaration_that_cannot_serve_is_one_line(change, message):
    bad = type("Bad", (RmsNorm,), change)()
    with pytest.raises(OpDefinitionError, match=message):
        bad.validate()


def test_an_op_without_a_reference_is_refused():
    class NoRef(Op):
        name, about, dims = "noref", "x", ("n",)
        inputs = (Tensor("x", "n"),)
        outputs = (Tensor("out", "n"),)

    with pytest.raises(OpDefinitionError, match=r"noref: no reference: define reference\(self, xp, x\)"):
        NoRef().validate()


def test_the_variant_decorator_records_and_checks_its_arguments():
    @variant(name="mine", dtypes=["float32", "bfloat16"], about="a test", writes=True)
    def fn(x, out):
        out[...] = x

    info = fn.__cudabench_variant__
    assert (info.name, info.dtypes, info.writes) == ("mine", ("float32", "bfloat16"), True)
    with pytest.raises(ValueError, match="@variant dtypes"):
        variant(dtypes=("bf16",))


def test_a_rule_that_forgets_its_scalars_and_a_reference_of_another_size_say_so():
    class Chunked(RmsNorm):
        rule_scalars = (Scalar("chunks", "int"),)

    op = Chunked()
    x, w = op.make_inputs(np, (2, 8), seed=0)
    with pytest.raises(
        ValueError, match=r"the grid rule gave 0 scalars, but rule_scalars names 1 \(chunks\)"
    ):
        op.kernel_args((x, w), np.empty((2, 8), np.float32), {}, Geometry(2, 256))
    with pytest.raises(ValueError, match="the reference has 3 values, the output 16"):
        check_output(np, np.zeros(16, np.float32), np.zeros(3), np.ones(3))
