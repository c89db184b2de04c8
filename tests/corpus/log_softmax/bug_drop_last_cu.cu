// cudabench:
//   variant: bug_drop_last_cu
//   entry: log_softmax_bug_drop_last_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block whose sum misses the last term
#include "log_softmax.cuh"

extern "C" __global__ void __launch_bounds__(256)
log_softmax_bug_drop_last_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  log_softmax::row<log_softmax::kDropLast>(x, out, rows, cols);
}
