"""logsumexp: log(sum(exp(x))) of each row, stably.

Baselines: torch.logsumexp in float32 (`torch`), and on 16-bit tensors (`torch_native`,
whose exp, sum, log and add each round to the element type: informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_logsumexp(x):
    """torch.logsumexp of a float32 copy, rounded once to the dtype."""
    import torch

    return torch.logsumexp(x.float(), dim=-1).to(x.dtype).reshape(-1)


def torch_logsumexp_native(x):
    """torch.logsumexp as called on the tensor: in 16-bit its steps round to the element type."""
    import torch

    return torch.logsumexp(x, dim=-1).reshape(-1)


class LogSumExp(Op):
    about = "out[i] = max_j x + log(sum_j exp(x[i, j] - max_j x))"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", ("rows",)),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_logsumexp), "torch_native": torch_call(torch_logsumexp_native)}

    def reference(self, xp, x):
        m = x.max(axis=-1, keepdims=True)
        return (m + xp.log(xp.exp(x - m).sum(axis=-1, keepdims=True)))[..., 0]
