// cudabench:
//   variant: block
//   entry: row_var_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, two passes (the mean, then the squared deviations), per-thread sums and a shuffle tree
#include "row_var.cuh"

extern "C" __global__ void __launch_bounds__(256)
row_var_block(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  row_var::row<row_var::kNone>(x, out, rows, cols);
}
