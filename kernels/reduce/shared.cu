// cudabench:
//   variant: shared
//   entry: reduce_sum_shared
//   block: 256
//   grid: segments
//   dtypes: [float32, float16, bfloat16]
//   about: tree reduction in shared memory, grid-stride loads (seed 001 opt, seed 002 reduce_v2)
//
// Each thread adds a strided slice of its row (coalesced: neighbouring threads read
// neighbouring floats, as seed 001 "opt" found), then the partial sums are halved in
// shared memory until one is left. The block must be a power of two (the tree halves it).
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_shared(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float tile[256];  // one slot per thread: the block is at most 256 threads
  if (group == 32) {  // short rows: each row's 32 lane sums are halved in the warp's slice
    for (cb::WarpRows w = cb::first_warp_rows(); w.row0 < rows; cb::next_warp_rows(w)) {
      float acc[cb::kWarpRows];
      cb::warp_rows_sum(x, rows, cols, w, acc);
      float* slice = tile + (threadIdx.x & ~31);
#pragma unroll
      for (int r = 0; r < cb::kWarpRows; ++r) {
        slice[w.lane] = acc[r];
        __syncwarp();
        for (int half = 16; half > 0; half >>= 1) {
          if (w.lane < half) slice[w.lane] += slice[w.lane + half];
          __syncwarp();
        }
        if (w.lane == 0 && w.row0 + r < rows) out[w.row0 + r] = cb::from_float<elem_t>(slice[0]);
        __syncwarp();  // slice[0] is read before the next row overwrites it
      }
    }
    return;
  }
  const cb::Segment s = cb::segment_of_block(chunks);  // long rows: a block per segment
  tile[threadIdx.x] = cb::strided_sum(x + s.row * cols,
                                      (long long)s.chunk * blockDim.x + threadIdx.x, cols,
                                      (long long)chunks * blockDim.x);
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {  // the block must be a power of 2
    if (threadIdx.x < half) tile[threadIdx.x] += tile[threadIdx.x + half];
    __syncthreads();
  }
  cb::finish_row(tile[0], s, chunks, out, partials, counters);
}
