"""prefix_sum: the inclusive prefix sum along each row (signed terms: sums cross zero)."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class PrefixSum(Op):
    about = "out[i, j] = x[i, 0] + ... + x[i, j], along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x):
        return xp.cumsum(x, axis=-1)
