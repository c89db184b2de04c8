"""matmul: C = A @ B with signed normal entries (M x N x K; 1-D: a dot product of K).

Baselines: torch.matmul in float32 (`torch`), and on 16-bit tensors (`torch_native`:
informative in 16-bit)"""

from cudabench.op import Op, Scalar, Tensor, tiles, torch_call


def torch_matmul(A, B):
    """torch.matmul of float32 copies (cuBLAS sgemm; TF32 is off by default), rounded once."""
    import torch

    return torch.matmul(A.float(), B.float()).to(A.dtype)


def torch_matmul_native(A, B):
    """torch.matmul on the stored tensors (in 16-bit cuBLAS may reduce split-K partial sums in
    the element type: allow_*_reduced_precision_reduction)."""
    import torch

    return torch.matmul(A, B)


class Matmul(Op):
    about = "C[m, n] = sum_k A[m, k] * B[k, n], float32 accumulation"
    dims = ("M", "N", "K")
    example = "512x512x4096"
    inputs = (Tensor("A", "M K"), Tensor("B", "K N"))
    outputs = (Tensor("C", "M N"),)
    scalars = (Scalar("M"), Scalar("N"), Scalar("K"))
    rules = {"tiles": tiles(32, x="N", y="M")}
    accumulate = "K"
    library = {"torch": torch_call(torch_matmul), "torch_native": torch_call(torch_matmul_native)}
    compute_bound = True

    def reference(self, xp, A, B):
        return A @ B

    def flop_count(self, dims):
        return 2 * dims.M * dims.N * dims.K
