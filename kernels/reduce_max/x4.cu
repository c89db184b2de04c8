// cudabench:
//   variant: x4
//   entry: reduce_max_x4
//   block: 256
//   grid: segments
//   dtypes: [float32, float16, bfloat16]
//   about: float4 loads (aligned head and scalar tail), warp and block max from -inf, split rows joined by the last block (seed 001 reduce_max_x4)
//
// The sum machinery of kernels/common/reduce.cuh with Max as the combining operation:
// short rows a warp per 4 rows, long rows a block per segment, the last block of a split row
// combining the partials. The identity is -inf, not seed 001's FLT_MIN.
#include "common/reduce.cuh"

extern "C" __global__ void CB_ROWS_BOUNDS
reduce_max_x4(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
              unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::reduce_rows<true, cb::Max>(x, out, partials, counters, rows, cols, group, chunks);
}
