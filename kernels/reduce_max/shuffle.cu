// cudabench:
//   variant: shuffle
//   entry: reduce_max_shuffle
//   block: 256
//   grid: segments
//   about: 4-byte loads, warp max by __shfl_xor_sync, warp leaders meet in shared memory (seed 002 max_kernel)
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_max_shuffle(const float* __restrict__ x, float* __restrict__ out, float* partials,
                   unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  if (group == 32) {
    cb::reduce_short_rows<false, cb::Max>(x, out, rows, cols);
    return;
  }
  const cb::Segment s = cb::segment_of_block(chunks);
  const float v = cb::segment_reduce<false, cb::Max>(x, cols, s, chunks, scratch);
  cb::finish_row<cb::Max>(v, s, chunks, out, partials, counters);
}
