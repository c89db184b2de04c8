// cudabench:
//   variant: x4
//   entry: reduce_max_x4
//   block: 256
//   grid: segments
//   about: float4 loads (aligned head and scalar tail), warp and block max from -inf, split rows joined by the last block (seed 001 reduce_max_x4)
//
// The sum machinery of kernels/common/reduce.cuh with Max as the combining operation:
// short rows a warp per 4 rows, long rows a block per segment, the last block of a split row
// combining the partials. The identity is -inf, not seed 001's FLT_MIN.
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_max_x4(const float* __restrict__ x, float* __restrict__ out, float* partials,
              unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  if (group == 32) {
    cb::reduce_short_rows<true, cb::Max>(x, out, rows, cols);
    return;
  }
  const cb::Segment s = cb::segment_of_block(chunks);
  const float v = cb::segment_reduce<true, cb::Max>(x, cols, s, chunks, scratch);
  cb::finish_row<cb::Max>(v, s, chunks, out, partials, counters);
}
