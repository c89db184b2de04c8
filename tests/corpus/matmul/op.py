"""matmul: C = A @ B with signed normal entries (M x N x K; 1-D: a dot product of K)."""

from cudabench.op import Op, Scalar, Tensor, tiles


class Matmul(Op):
    about = "C[m, n] = sum_k A[m, k] * B[k, n], float32 accumulation"
    dims = ("M", "N", "K")
    example = "512x512x4096"
    inputs = (Tensor("A", "M K"), Tensor("B", "K N"))
    outputs = (Tensor("C", "M N"),)
    scalars = (Scalar("M"), Scalar("N"), Scalar("K"))
    rules = {"tiles": tiles(32, x="N", y="M")}
    accumulate = "K"
    compute_bound = True

    def reference(self, xp, A, B):
        return A @ B

    def flop_count(self, dims):
        return 2 * dims.M * dims.N * dims.K
