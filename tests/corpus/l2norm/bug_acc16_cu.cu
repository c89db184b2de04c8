// cudabench:
//   variant: bug_acc16_cu
//   entry: l2norm_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with the sum of squares accumulated in the 16-bit element type
#include "l2norm.cuh"

extern "C" __global__ void __launch_bounds__(256)
l2norm_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  l2norm::row<l2norm::kAcc16>(x, out, rows, cols);
}
