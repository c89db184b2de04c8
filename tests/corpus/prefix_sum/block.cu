// cudabench:
//   variant: block
//   entry: prefix_sum_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row in tiles of 1024, 4 elements a thread, a shuffle scan of the threads' totals, a running carry
#include "prefix_sum.cuh"

extern "C" __global__ void __launch_bounds__(256)
prefix_sum_block(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  prefix_sum::scan<prefix_sum::kNone>(x, out, rows, cols);
}
