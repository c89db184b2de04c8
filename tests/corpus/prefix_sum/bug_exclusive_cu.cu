// cudabench:
//   variant: bug_exclusive_cu
//   entry: prefix_sum_bug_exclusive_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block writing the exclusive scan
#include "prefix_sum.cuh"

extern "C" __global__ void __launch_bounds__(256)
prefix_sum_bug_exclusive_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  prefix_sum::scan<prefix_sum::kExclusive>(x, out, rows, cols);
}
