// cudabench:
//   variant: atomic
//   entry: reduce_sum_atomic
//   block: 256
//   grid: segments
//   vector: 4
//   init: zero
//   about: one pass, float4 loads and shuffle, each group's partial atomicAdd-ed into out[row] (seed 001, seed 002 reduce_v3/v4)
//
// Block (or warp) partials meet in the output through atomicAdd in the same kernel, as the
// seeds do; the output is zeroed before every launch (init: zero, timed with the launch).
// The order of the adds varies from run to run, so the last bits of the sum may too.
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_atomic(const float* __restrict__ x, float* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  const cb::Segment s = cb::segment_of_thread(rows, group, chunks);
  if (!s.valid) return;
  const float* row = x + s.row * cols;
  float v = cb::vec4_sum(row, cols, (long long)s.chunk * group + s.lane,
                         (long long)chunks * group);
  v = cb::group_sum(v, group, scratch);
  if (s.lane == 0) atomicAdd(&out[s.row], v);
}
