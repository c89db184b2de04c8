// cudabench:
//   variant: bug_fast_exp_cu
//   entry: softmax_rows_bug_fast_exp_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted and accepted - block with __expf (fast math, ex2.approx of x * log2 e), as Triton's exp
#include "softmax_rows.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_bug_fast_exp_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  softmax_rows::two_pass<softmax_rows::kFastExp>(x, out, rows, cols);
}
