// cudabench:
//   variant: block
//   entry: log_softmax_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the max, the sum of expf(x - max), then (x - max) - logf(sum)
#include "log_softmax.cuh"

extern "C" __global__ void __launch_bounds__(256)
log_softmax_block(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  log_softmax::row<log_softmax::kNone>(x, out, rows, cols);
}
