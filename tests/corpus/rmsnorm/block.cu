// cudabench:
//   variant: block
//   entry: rmsnorm_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the sum of squares by per-thread sums and a shuffle tree, rsqrtf
#include "rmsnorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_block(const elem_t* __restrict__ x, const elem_t* __restrict__ w, elem_t* __restrict__ out,
  long long rows, long long cols, float eps) {
  rmsnorm::row<rmsnorm::kNone>(x, w, out, rows, cols, eps);
}
