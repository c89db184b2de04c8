"""l2norm: each row divided by its 2-norm (torch.nn.functional.normalize).

Baselines: F.normalize in float32 (`torch`), and on 16-bit tensors (`torch_native`:
informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call


def torch_normalize(x):
    """F.normalize of a float32 copy, rounded once to the dtype."""
    import torch

    return torch.nn.functional.normalize(x.float(), dim=-1).to(x.dtype)


def torch_normalize_native(x):
    """F.normalize on the stored tensor: in 16-bit the norm is rounded before the division."""
    import torch

    return torch.nn.functional.normalize(x, dim=-1)


class L2Norm(Op):
    about = "out = x / max(||x||_2, 1e-12), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_normalize), "torch_native": torch_call(torch_normalize_native)}

    def reference(self, xp, x):
        return x / xp.maximum(xp.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
