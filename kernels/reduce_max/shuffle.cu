// cudabench:
//   variant: shuffle
//   entry: reduce_max_shuffle
//   block: 256
//   grid: segments
//   dtypes: [float32, float16, bfloat16]
//   about: 4-byte loads, warp max by __shfl_xor_sync, warp leaders meet in shared memory (seed 002 max_kernel)
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_max_shuffle(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                   unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::reduce_rows<false, cb::Max>(x, out, partials, counters, rows, cols, group, chunks);
}
