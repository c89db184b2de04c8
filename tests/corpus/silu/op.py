"""silu: x * sigmoid(x), elementwise; inputs N(0, 3)."""

from cudabench.op import Op, Scalar, Tensor, elements, normal


class Silu(Op):
    about = "out = x / (1 + exp(-x)), elementwise"
    dims = ("n",)
    inputs = (Tensor("x", "n", fill=normal(0.0, 3.0)),)
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    rules = {"thread": elements()}

    def reference(self, xp, x):
        return x / (1 + xp.exp(-x))
