// cudabench:
//   variant: bug_tail_cu
//   entry: l2norm_bug_tail_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block whose norm skips the cols % 32 tail
#include "l2norm.cuh"

extern "C" __global__ void __launch_bounds__(256)
l2norm_bug_tail_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  l2norm::row<l2norm::kTail>(x, out, rows, cols);
}
