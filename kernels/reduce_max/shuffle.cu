// cudabench:
//   variant: shuffle
//   entry: reduce_max_shuffle
//   block: BLOCK
//   grid: segments
//   params:                  # kernels/common/reduce.cuh and ops/reduce.py read these
//     BLOCK: [256, 128, 512, 1024]
//     WARP_ROW_BYTES: [16, 8, 32]       # short rows: rows a warp takes x element size
//     ITEMS: [32, 16, 64, 128, 256]     # long rows: elements a thread, at least
//     GRID_K: [0, 1, 2, 4, 8, 16, 32]   # long rows: blocks per SM (0: the occupancy)
//     LOADS: [4, 2, 8]                  # long rows: loads in flight a thread
//   dtypes: [float32, float16, bfloat16]
//   about: 4-byte loads, warp max by __shfl_xor_sync, warp leaders meet in shared memory (seed 002 max_kernel)
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_max_shuffle(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                   unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::reduce_rows<false, cb::Max>(x, out, partials, counters, rows, cols, group, chunks);
}
