"""l2norm: each row divided by its 2-norm (torch.nn.functional.normalize)."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class L2Norm(Op):
    about = "out = x / max(||x||_2, 1e-12), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x):
        return x / xp.maximum(xp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
