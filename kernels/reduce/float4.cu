// cudabench:
//   variant: float4
//   entry: reduce_sum_float4
//   block: BLOCK
//   grid: segments
//   params:                  # kernels/common/reduce.cuh and ops/reduce.py read these
//     BLOCK: [256, 128, 512, 1024]
//     WARP_ROW_BYTES: [16, 8, 32]       # short rows: rows a warp takes x element size
//     ITEMS: [32, 16, 64, 128, 256]     # long rows: elements a thread, at least
//     GRID_K: [0, 1, 2, 4, 8, 16, 32]   # long rows: blocks per SM (0: the occupancy)
//     LOADS: [4, 2, 8]                  # long rows: loads in flight a thread
//   dtypes: [float32, float16, bfloat16]
//   about: 16-byte float4 streaming loads (read-only, no L1 allocation), warp shuffle, aligned head and scalar tail (seed 002 reduce_v4, seed 001 x4)
//
// Seed 002's reduce_v4 reads a float4 at idx*4 whenever idx < N and so reads past the end
// when N % 4 != 0; here the float4 body stops at the last whole vector and the row's first
// threads add the (at most 3 + 3) leftover floats, so any row length and alignment works.
#include "common/reduce.cuh"

extern "C" __global__ void CB_ROWS_BOUNDS
reduce_sum_float4(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::reduce_rows<true>(x, out, partials, counters, rows, cols, group, chunks);
}
