"""rmsnorm: out = x * w / sqrt(mean(x^2) + eps) along each row (the guide's example).

Baselines: torch's F.rms_norm in float32 (`torch`), and as called on 16-bit tensors
(`torch_native`: informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call, uniform

EPS = 1e-6


def torch_rms_norm(x, w):
    """F.rms_norm on float32 copies, rounded once to the dtype."""
    import torch

    return torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), w.float(), EPS).to(x.dtype)


def torch_rms_norm_native(x, w):
    """F.rms_norm on the stored tensors: in 16-bit its result may be rounded twice."""
    import torch

    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)


class RmsNorm(Op):
    about = "out = x * w / sqrt(mean(x^2) + eps), along each row"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"), Tensor("w", "cols", fill=uniform(0.5, 2.0)))
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", EPS))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_rms_norm), "torch_native": torch_call(torch_rms_norm_native)}

    def reference(self, xp, x, w):
        return x * w / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS)
