// cudabench:
//   variant: bug_acc16_cu
//   entry: rmsnorm_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with the sum of squares accumulated in the 16-bit element type
#include "rmsnorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_bug_acc16_cu(const elem_t* __restrict__ x, const elem_t* __restrict__ w, elem_t* __restrict__ out,
  long long rows, long long cols, float eps) {
  rmsnorm::row<rmsnorm::kAcc16>(x, w, out, rows, cols, eps);
}
