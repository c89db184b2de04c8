// cudabench:
//   variant: float4
//   entry: reduce_sum_float4
//   block: 256
//   grid: segments
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
