// cudabench:
//   variant: block_uncached
//   entry: softmax_block_uncached
//   block: 1024
//   grid: row_block
//   requires: {max_cols: 1048576}
//   about: a block per row for rows too long for shared memory, online max and sum in one pass, a second pass writes (seed 003 OneFlow SoftmaxBlockUncachedImpl)
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(1024)
softmax_block_uncached(const float* __restrict__ x, float* __restrict__ out, float* partials,
                       long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  const float* row = x + (long long)blockIdx.x * cols;
  float* dst = out + (long long)blockIdx.x * cols;
  const bool vec4 = (cols & 3) == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  cb::MaxSum acc = cb::empty_max_sum();
  if (vec4) {
    for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(row)[j];
      acc = cb::push(cb::push(cb::push(cb::push(acc, v.x), v.y), v.z), v.w);
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) acc = cb::push(acc, row[c]);
  }
  acc = cb::block_combine(acc, scratch);
  const float m = acc.max, inv = 1.0f / acc.sum;
  if (vec4) {
    for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(row)[j];
      reinterpret_cast<float4*>(dst)[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv,
                                                      __expf(v.z - m) * inv, __expf(v.w - m) * inv);
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = __expf(row[c] - m) * inv;
  }
}
