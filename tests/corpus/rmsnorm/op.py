"""rmsnorm: out = x * w / sqrt(mean(x^2) + eps) along each row (the guide's example)."""

from cudabench.op import Op, Scalar, Tensor, block_rows, uniform

EPS = 1e-6


class RmsNorm(Op):
    about = "out = x * w / sqrt(mean(x^2) + eps), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"), Tensor("w", "cols", fill=uniform(0.5, 2.0)))
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", EPS))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x, w):
        return x * w / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS)
