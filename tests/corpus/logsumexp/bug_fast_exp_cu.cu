// cudabench:
//   variant: bug_fast_exp_cu
//   entry: logsumexp_bug_fast_exp_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted and accepted - block with __expf (fast math, ex2.approx of x * log2 e), as Triton's exp
#include "logsumexp.cuh"

extern "C" __global__ void __launch_bounds__(256)
logsumexp_bug_fast_exp_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  logsumexp::row<logsumexp::kFastExp>(x, out, rows, cols);
}
