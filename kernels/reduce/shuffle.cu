// cudabench:
//   variant: shuffle
//   entry: reduce_sum_shuffle
//   block: 256
//   grid: segments
//   about: warp-shuffle reduction, warp per short row, block per long row segment (seed 001 reduce_sum_shuffle, 002 reduce_v3, 004 BlockReduceSum)
//
// No shared-memory tree: a warp sums with __shfl_xor_sync in five steps and no barrier; a
// block adds its warps' sums through 32 floats of shared memory.
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_shuffle(const float* __restrict__ x, float* __restrict__ out, float* partials,
                   unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  const cb::Segment s = cb::segment_of_thread(rows, group, chunks);
  if (!s.valid) return;
  const float* row = x + s.row * cols;
  float v = cb::strided_sum(row, (long long)s.chunk * group + s.lane, cols,
                            (long long)chunks * group);
  v = cb::group_sum(v, group, scratch);
  cb::finish_row(v, s, chunks, out, partials, counters, scratch);
}
