// cudabench:
//   variant: block
//   entry: dot_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, per-thread sums of the products then a shuffle tree
#include "dot.cuh"

extern "C" __global__ void __launch_bounds__(256)
dot_block(const elem_t* __restrict__ x, const elem_t* __restrict__ y, elem_t* __restrict__ out, long long rows,
  long long cols) {
  dot::row<dot::kNone>(x, y, out, rows, cols);
}
