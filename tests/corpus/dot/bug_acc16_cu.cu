// cudabench:
//   variant: bug_acc16_cu
//   entry: dot_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block accumulating the products in the 16-bit element type
#include "dot.cuh"

extern "C" __global__ void __launch_bounds__(256)
dot_bug_acc16_cu(const elem_t* __restrict__ x, const elem_t* __restrict__ y, elem_t* __restrict__ out, long long rows,
  long long cols) {
  dot::row<dot::kAcc16>(x, y, out, rows, cols);
}
