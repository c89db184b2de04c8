// cudabench:
//   variant: x4
//   entry: reduce_max_x4
//   block: BLOCK
//   grid: segments
//   params:                  # kernels/common/reduce.cuh and ops/reduce.py read these
//     BLOCK: [256, 128, 512, 1024]
//     WARP_ROW_BYTES: [16, 8, 32]       # short rows: rows a warp takes x element size
//     ITEMS: [32, 16, 64, 128, 256]     # long rows: elements a thread, at least
//     GRID_K: [0, 1, 2, 4, 8, 16, 32]   # long rows: blocks per SM (0: the occupancy)
//     LOADS: [4, 2, 8]                  # long rows: loads in flight a thread
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
