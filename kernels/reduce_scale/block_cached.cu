// cudabench:
//   variant: block_cached
//   entry: reduce_scale_block_cached
//   block: 256
//   grid: row_block
//   requires: {max_cols: 8192}
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row with the row held in registers (up to 32 floats a thread), one read and one write, for rows too long for a warp
#include "common/reduce.cuh"

template <int kPerThread>
__device__ __forceinline__ void scale_block(elem_t* __restrict__ row, long long cols, float* scratch) {
  elem_t v[kPerThread];  // the row stays in its own type: half the registers in 16-bit
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const long long c = threadIdx.x + 256LL * k;
    v[k] = c < cols ? row[c] : cb::from_float<elem_t>(0.0f);
    m = fmaxf(m, fabsf(cb::to_float(v[k])));
  }
  m = cb::block_reduce<cb::Max>(m, scratch);
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const long long c = threadIdx.x + 256LL * k;
    if (c < cols) row[c] = cb::from_float<elem_t>(cb::to_float(v[k]) / m);
  }
}

extern "C" __global__ void __launch_bounds__(256)
reduce_scale_block_cached(elem_t* __restrict__ x, long long rows, long long cols) {
  __shared__ float scratch[32];
  elem_t* row = x + (long long)blockIdx.x * cols;
  if (cols <= 1024) scale_block<4>(row, cols, scratch);
  else if (cols <= 2048) scale_block<8>(row, cols, scratch);
  else if (cols <= 4096) scale_block<16>(row, cols, scratch);
  else scale_block<32>(row, cols, scratch);
}
