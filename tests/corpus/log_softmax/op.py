"""log_softmax along each row: x - logsumexp(x), near 0 for a row's dominant element.

Baseline: torch.log_softmax (it computes 16-bit inputs in float32)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_log_softmax(x):
    import torch

    return torch.log_softmax(x, dim=-1)


class LogSoftmax(Op):
    about = "out = x - max - log(sum(exp(x - max))), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_log_softmax)}

    def reference(self, xp, x):
        d = x - x.max(axis=-1, keepdims=True)
        return d - xp.log(xp.exp(d).sum(axis=-1, keepdims=True))
