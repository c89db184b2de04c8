"""dot: the signed dot product of two rows, per row (1-D: one dot product)."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class Dot(Op):
    about = "out[i] = sum_j x[i, j] * y[i, j] (signed: the sum cancels)"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"), Tensor("y", "rows cols"))
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x, y):
        return (x * y).sum(axis=-1)
