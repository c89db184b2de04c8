// cudabench:
//   variant: block
//   entry: softmax_rows_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, three passes (the max, the sum of expf(x - max), then expf(x - max) * (1 / sum))
#include "softmax_rows.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_block(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  softmax_rows::two_pass<softmax_rows::kNone>(x, out, rows, cols);
}
