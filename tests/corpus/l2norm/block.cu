// cudabench:
//   variant: block
//   entry: l2norm_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the sum of squares by per-thread sums and a shuffle tree, x * (1 / max(sqrtf(sum), 1e-12))
#include "l2norm.cuh"

extern "C" __global__ void __launch_bounds__(256)
l2norm_block(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  l2norm::row<l2norm::kNone>(x, out, rows, cols);
}
