"""prefix_sum: the inclusive prefix sum along each row (signed terms: sums cross zero).

Baselines: torch.cumsum with dtype=float32 (`torch`), and as called on a 16-bit tensor
(`torch_native`, whose running sums are in the element type: informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_cumsum(x):
    """torch.cumsum accumulating in float32 (dtype=), rounded once to the dtype."""
    import torch

    return torch.cumsum(x, dim=-1, dtype=torch.float32).to(x.dtype)


def torch_cumsum_native(x):
    """torch.cumsum as called on the tensor: in 16-bit it adds in the element type."""
    import torch

    return torch.cumsum(x, dim=-1)


class PrefixSum(Op):
    about = "out[i, j] = x[i, 0] + ... + x[i, j], along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_cumsum), "torch_native": torch_call(torch_cumsum_native)}

    def reference(self, xp, x):
        return xp.cumsum(x, axis=-1)
