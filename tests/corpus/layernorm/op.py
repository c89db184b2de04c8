"""layernorm: out = (x - mean) / sqrt(var + eps) * w + b along each row (issue 41's hold-out).

Baseline: torch's F.layer_norm as a user calls it (in 16-bit too: it computes in float32)"""

from cudabench.op import Op, Scalar, Tensor, block_rows, torch_call, uniform

EPS = 1e-5


def torch_layer_norm(x, w, b):
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, EPS)


class LayerNorm(Op):
    about = "out = (x - mean(x)) / sqrt(var(x) + eps) * w + b, along each row"
    dims = ("rows", "cols")
    example = "256x4096"
    inputs = (Tensor("x", "rows cols"), Tensor("w", "cols", fill=uniform(0.5, 2.0)), Tensor("b", "cols"))
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", EPS))
    rules = {"row": block_rows()}
    accumulate = "cols"
    library = {"torch": torch_call(torch_layer_norm)}

    def reference(self, xp, x, w, b):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / xp.sqrt(var + EPS) * w + b
