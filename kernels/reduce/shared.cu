// cudabench:
//   variant: shared
//   entry: reduce_sum_shared
//   block: 256
//   grid: segments
//   about: tree reduction in shared memory, grid-stride loads (seed 001 opt, seed 002 reduce_v2)
//
// Each thread adds a strided slice of its row (coalesced: neighbouring threads read
// neighbouring floats, as seed 001 "opt" found), then the group halves its partial sums in
// shared memory until one is left. The block must be a power of two (the tree halves it).
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_shared(const float* __restrict__ x, float* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float tile[256];  // one slot per thread: block 256
  __shared__ float scratch[32];
  const cb::Segment s = cb::segment_of_thread(rows, group, chunks);
  if (!s.valid) return;  // whole warps (warp groups) or whole blocks: never splits a group
  const float* row = x + s.row * cols;
  tile[threadIdx.x] = cb::strided_sum(row, (long long)s.chunk * group + s.lane, cols,
                                      (long long)chunks * group);
  const int base = threadIdx.x - s.lane;  // the group's first slot in the tile
  cb::group_sync(group);
  for (int half = group / 2; half > 0; half >>= 1) {
    if (s.lane < half) tile[threadIdx.x] += tile[threadIdx.x + half];
    cb::group_sync(group);
  }
  cb::finish_row(tile[base], s, chunks, out, partials, counters, scratch);
}
