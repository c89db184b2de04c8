// cudabench:
//   variant: bug_acc16_cu
//   entry: softmax_rows_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with the sum of exps accumulated in the 16-bit element type
#include "softmax_rows.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  softmax_rows::two_pass<softmax_rows::kAcc16>(x, out, rows, cols);
}
