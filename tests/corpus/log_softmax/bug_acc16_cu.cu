// cudabench:
//   variant: bug_acc16_cu
//   entry: log_softmax_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with the sum of exps accumulated in the 16-bit element type
#include "log_softmax.cuh"

extern "C" __global__ void __launch_bounds__(256)
log_softmax_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  log_softmax::row<log_softmax::kAcc16>(x, out, rows, cols);
}
