// cudabench:
//   variant: bug_drop_last_cu
//   entry: softmax_rows_bug_drop_last_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block whose sum misses the last term
#include "softmax_rows.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_bug_drop_last_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  softmax_rows::two_pass<softmax_rows::kDropLast>(x, out, rows, cols);
}
