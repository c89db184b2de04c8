"""gelu: the exact (erf) GELU, elementwise; inputs N(0, 2), so 1 + erf cancels below x = -3.

Baseline: torch's F.gelu (exact erf form; it computes 16-bit inputs in float32)"""

import math

from cudabench.op import Op, Scalar, Tensor, elements, normal, torch_call


def _erf(xp, x):
    if xp.__name__ == "numpy":
        from scipy.special import erf
    else:
        from cupyx.scipy.special import erf
    return erf(x)


def torch_gelu(x):
    import torch

    return torch.nn.functional.gelu(x)


class Gelu(Op):
    about = "out = 0.5 x (1 + erf(x / sqrt 2)), elementwise"
    dims = ("n",)
    inputs = (Tensor("x", "n", fill=normal(0.0, 2.0)),)
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    rules = {"thread": elements()}
    library = {"torch": torch_call(torch_gelu)}

    def reference(self, xp, x):
        return 0.5 * x * (1 + _erf(xp, x / math.sqrt(2.0)))
