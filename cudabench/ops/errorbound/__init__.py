"""A bound on the error a float32 kernel makes computing an op, read off the op's own
float64 `reference` by running it once more on traced arrays (first-order running error
analysis, done automatically).

    err = bound(op.reference, xp, inputs)   # flat float64, one bound per output element
    tol = C * err + ulps * u * |ref|        # C = SAFETY = 3 (+ the 16-bit output rounding, as now)

How it works. `bound` calls `reference(traced_xp, *traced_inputs)`. A traced array is a pair
(v, e): v the float64 value the reference computes, e >= 0 a bound on how far a float32
evaluation of the same formula, on the same (exact, as stored) inputs, can be from v. Inputs
have e = 0. Every operation computes v as the reference would and e by the rules below; the
output's e is the bound. Because the e's are magnitudes, they never cancel: an output near 0
because terms cancelled (x - mean, a signed sum, x*w + b) keeps an allowance set by the size
of the terms that produced it, which is where the |reference|-relative rule gave nothing.

The rules (u = 2^-24, float32's unit roundoff; |.| elementwise; z the result):

    constant c (Python number, plain array)  e = |c - float32(c)|   (0 for 1e0, 0.5, ints)
    x + y, x - y                             e = e_x + e_y + u|z|
    a chain of k terms (a + b - c + ...)     e = sum e_i + u|z| + (k - 2) u sum|t_i|  (any order)
    x * y                                    e = |y| e_x + |x| e_y + e_x e_y + u|z|
    x / y                                    e = (e_x + |z| e_y) / (|y| - e_y) + 2u|z|
    -x, abs(x)                               e = e_x
    maximum, minimum, clip                   e = max(e_x, e_y)        (exact: no rounding)
    sqrt(x)                                  e = e_x / (2 sqrt|x|) + 2u|z|
    exp(x)                                   e = |z| e_x + (4 + EXP_ARG |x|) u|z|
    log(x)                                   e = e_x / |x| + 2u|z| + 2u
    tanh, erf, sin, cos, ...                 e = |f'(x)| e_x + 4u|z|
    x ** p  (p a number)                     x*x for 2, sqrt for 1/2, 1/x for -1, else
                                             |p| |x|^(p-1) e_x + 8u|z|
    sum of n terms t_i (sum, mean, var,      e = sum e_i + LAMBDA u sqrt(max(Q_seq, Q_rand))
      linalg.norm; matmul, dot, einsum:        Q_seq = sum_{k=2..n} S_k^2, S_k = t_1 + ... + t_k
      Q_rand only, + u |x| @ |y|)              Q_rand = s^2 (n(n+1)/6 - 1) + m^2 (n(n+1)(2n+1)/6 - 1)
                                             (m, s^2: the terms' mean and variance; mean: / n
                                             + 2u|mean|)
    cumsum, the k-th prefix                  the sum's rule for t_1..t_k
    max, min over an axis                    e = max of the e_i
    sort along an axis                       e = max of the e_i along it
    where(c, a, b)                           e = e_a or e_b as chosen; where c compares values
                                             close enough that float32 could choose the other
                                             side (|lhs - rhs| <= 4 (e_lhs + e_rhs)), max(e_a, e_b)
                                             + |a - b|
    reshape, indexing, transpose, concatenate, ... move e with v

The allowances of the functions are CUDA's documented float32 accuracy (1 ulp <= 2u|z|):
expf 2 ulp, plus one rounding of x*log2(e) because __expf, Triton's and torch.compile's exp
compute exp2(x * log2 e), whose rounded product moves the result by u|x| relative; logf 1 ulp
or lg2.approx's 2^-22 absolute; tanhf, erff, sinf, cosf 2 ulp; powf 4 ulp; a division 2
roundings (IEEE, or 1/y then a multiply); sqrt 1 ulp (sqrt.approx).

The sums. A float32 sum of n terms, in any order (sequential, a tree, a per-thread sum then a
tree, split-K, a scan), makes n - 1 roundings, each at most u times the partial sum it
produces. Worst case that is u sum|S_node| <= (n - 1) u sum|t_i|, far from what happens:
in Higham & Mary's probabilistic model ("A new approach to probabilistic rounding error
analysis", SISC 2019) the n - 1 errors are independent and mean zero, so their sum is within
LAMBDA u sqrt(sum S_node^2) with probability about 1 - 2 exp(-LAMBDA^2 / 2). The partial sums
S_node depend on the order; the sequential order has the largest of the usual ones, so the
rule takes its partial sums in the data's order (Q_seq: data structured along the row, a
scan) or their expectation for a random order (Q_rand: any order uncorrelated with the data),
whichever is larger. Like-signed terms of size t: sqrt(Q) ~ t n^1.5 / sqrt 3, relative
u sqrt(n / 3); signed terms of rms s: ~ s n / sqrt 2, set by the terms, not the result.
(Higham & Mary's order-free bound LAMBDA sqrt(n - 1) u sum|t_i| is ~sqrt(n) looser on
signed sums.) The propagated errors e_i are added worst case. matmul and einsum take Q_rand
only (their K order is the tiling's): A @ B and A^2 @ B^2 give its mean and variance.

What it is not. A bound for the formula as the reference writes it: a kernel that computes
the same value by another formula (one-pass variance E[x^2] - E[x]^2, online softmax,
Welford) is covered as far as its error is like the reference formula's (the safety factor C
covers a few extra roundings), and a less stable formula can exceed it (that is what the
verdict should say). First order: products of errors are dropped except in x * y and the
divisor of x / y (a divisor whose error reaches its size gives an infinite bound).

Anything the tracer has no rule for raises `UnsupportedReference` (never a wrong bound):
a function without a rule, a traced array converted to a plain one (np.asarray, float(),
.item(), iteration into Python numbers, a cupy ufunc from outside xp), a branch (`if`, an
index, astype(int)) on a computed value that carries error, or a comparison of computed
values too close to call used anywhere but `where`. The caller falls back to the old rule.
"""

from cudabench.ops.errorbound.model import SAFETY, U, UnsupportedReference
from cudabench.ops.errorbound.tracer import bound, trace

__all__ = ["SAFETY", "U", "UnsupportedReference", "bound", "trace"]
