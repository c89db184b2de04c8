"""row_var: the population variance of each row (numpy's var, ddof = 0).

Baseline: torch's x.var(dim=-1, correction=0) (Welford in float32, also for 16-bit tensors)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_var(x):
    return x.var(dim=-1, correction=0).reshape(-1)


class RowVar(Op):
    about = "out[i] = mean_j (x[i, j] - mean_j x[i, j])^2"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_var)}

    def reference(self, xp, x):
        return x.var(axis=-1)
