"""silu: x * sigmoid(x), elementwise; inputs N(0, 3).

Baseline: torch's F.silu (it computes 16-bit inputs in float32)"""

from cudabench.op import Op, Scalar, Tensor, elements, normal, torch_call


def torch_silu(x):
    import torch

    return torch.nn.functional.silu(x)


class Silu(Op):
    about = "out = x / (1 + exp(-x)), elementwise"
    dims = ("n",)
    inputs = (Tensor("x", "n", fill=normal(0.0, 3.0)),)
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    rules = {"thread": elements()}
    library = {"torch": torch_call(torch_silu)}

    def reference(self, xp, x):
        return x / (1 + xp.exp(-x))
