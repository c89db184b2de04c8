// cudabench:
//   variant: bug_tail_cu
//   entry: dot_bug_tail_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block skipping the cols % 32 tail
#include "dot.cuh"

extern "C" __global__ void __launch_bounds__(256)
dot_bug_tail_cu(const elem_t* __restrict__ x, const elem_t* __restrict__ y, elem_t* __restrict__ out, long long rows,
  long long cols) {
  dot::row<dot::kTail>(x, y, out, rows, cols);
}
