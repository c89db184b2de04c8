// cudabench:
//   variant: bug_tail_cu
//   entry: rmsnorm_bug_tail_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block whose sum of squares skips the cols % 32 tail
#include "rmsnorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_bug_tail_cu(const elem_t* __restrict__ x, const elem_t* __restrict__ w, elem_t* __restrict__ out,
  long long rows, long long cols, float eps) {
  rmsnorm::row<rmsnorm::kTail>(x, w, out, rows, cols, eps);
}
