// cudabench:
//   variant: shuffle
//   entry: reduce_sum_shuffle
//   block: BLOCK
//   grid: segments
//   params:                  # kernels/common/reduce.cuh and ops/reduce.py read these
//     BLOCK: [256, 128, 512, 1024]
//     WARP_ROW_BYTES: [16, 8, 32]       # short rows: rows a warp takes x element size
//     ITEMS: [32, 16, 64, 128, 256]     # long rows: elements a thread, at least
//     GRID_K: [0, 1, 2, 4, 8, 16, 32]   # long rows: blocks per SM (0: the occupancy)
//     LOADS: [4, 2, 8]                  # long rows: loads in flight a thread
//   dtypes: [float32, float16, bfloat16]
//   about: warp-shuffle reduction, warps for short rows, blocks for long ones (seed 001 reduce_sum_shuffle, 002 reduce_v3, 004 BlockReduceSum)
//
// No shared-memory tree: a warp sums with __shfl_xor_sync in five steps and no barrier; a
// block adds its warps' sums through 32 floats of shared memory.
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sum_shuffle(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                   unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::reduce_rows<false>(x, out, partials, counters, rows, cols, group, chunks);
}
