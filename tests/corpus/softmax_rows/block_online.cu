// cudabench:
//   variant: block_online
//   entry: softmax_rows_block_online
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, one pass for the max and the sum (rescaled as the max grows, expf), then the write
#include "softmax_rows.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_rows_block_online(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  softmax_rows::online(x, out, rows, cols);
}
