// cudabench:
//   variant: bug_acc16_cu
//   entry: prefix_sum_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with every running sum rounded to the 16-bit element type
#include "prefix_sum.cuh"

extern "C" __global__ void __launch_bounds__(256)
prefix_sum_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  prefix_sum::scan<prefix_sum::kAcc16>(x, out, rows, cols);
}
