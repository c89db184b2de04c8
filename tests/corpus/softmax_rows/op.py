"""softmax_rows: softmax along each row (inputs N(0, 1); the catalogue's softmax has its own tolerance).

Baseline: torch.softmax (it computes 16-bit inputs in float32)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_softmax(x):
    import torch

    return torch.softmax(x, dim=-1)


class Softmax(Op):
    about = "out = exp(x - max) / sum(exp(x - max)), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_softmax)}

    def reference(self, xp, x):
        e = xp.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
