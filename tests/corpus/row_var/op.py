"""row_var: the population variance of each row (numpy's var, ddof = 0)."""

from cudabench.op import Op, Scalar, Tensor, block_rows


class RowVar(Op):
    about = "out[i] = mean_j (x[i, j] - mean_j x[i, j])^2"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"

    def reference(self, xp, x):
        return x.var(axis=-1)
