"""log_softmax along each row: x - logsumexp(x), near 0 for a row's dominant element."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class LogSoftmax(Op):
    about = "out = x - max - log(sum(exp(x - max))), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x):
        d = x - x.max(axis=-1, keepdims=True)
        return d - xp.log(xp.exp(d).sum(axis=-1, keepdims=True))
