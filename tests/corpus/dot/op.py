"""dot: the signed dot product of two rows, per row (1-D: one dot product).

Baselines: torch in float32 (`torch`), and (x * y).sum(-1) on 16-bit tensors (`torch_native`,
which rounds each product to the element type: informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_dot(x, y):
    """The products and their sum in float32, rounded once to the dtype."""
    return (x.float() * y.float()).sum(-1).to(x.dtype).reshape(-1)


def torch_dot_native(x, y):
    """(x * y).sum(-1) on the stored tensors: in 16-bit each product is rounded first."""
    return (x * y).sum(-1).reshape(-1)


class Dot(Op):
    about = "out[i] = sum_j x[i, j] * y[i, j] (signed: the sum cancels)"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"), Tensor("y", "rows cols"))
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_dot), "torch_native": torch_call(torch_dot_native)}

    def reference(self, xp, x, y):
        return (x * y).sum(axis=-1)
