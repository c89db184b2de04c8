"""logsumexp: log(sum(exp(x))) of each row, stably."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class LogSumExp(Op):
    about = "out[i] = max_j x + log(sum_j exp(x[i, j] - max_j x))"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x):
        m = x.max(axis=-1, keepdims=True)
        return (m + xp.log(xp.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]
