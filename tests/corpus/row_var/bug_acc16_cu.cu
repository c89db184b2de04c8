// cudabench:
//   variant: bug_acc16_cu
//   entry: row_var_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with both sums accumulated in the 16-bit element type
#include "row_var.cuh"

extern "C" __global__ void __launch_bounds__(256)
row_var_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  row_var::row<row_var::kAcc16>(x, out, rows, cols);
}
