// cudabench:
//   variant: block_smem
//   entry: softmax_block_smem
//   block: 256
//   grid: row_block_smem
//   about: a block per row, the row cached in dynamic shared memory (cols x 4 bytes, up to 48 KiB), block reductions (seed 003 OneFlow SoftmaxBlockSMemImpl)
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_block_smem(const float* __restrict__ x, float* __restrict__ out, float* partials,
                   long long rows, long long cols, int chunks) {
  extern __shared__ float cache[];
  __shared__ float scratch[32];
  const float* row = x + (long long)blockIdx.x * cols;
  float* dst = out + (long long)blockIdx.x * cols;
  const bool vec4 = (cols & 3) == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  float m = -INFINITY;
  if (vec4) {
    for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
      const float4 v = reinterpret_cast<const float4*>(row)[j];
      reinterpret_cast<float4*>(cache)[j] = v;
      m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
      cache[c] = row[c];
      m = fmaxf(m, cache[c]);
    }
  }
  m = cb::block_reduce<cb::Max>(m, scratch);
  float s = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float e = __expf(cache[c] - m);
    cache[c] = e;
    s += e;
  }
  const float inv = 1.0f / cb::block_reduce<cb::Sum>(s, scratch);
  if (vec4) {
    for (long long j = threadIdx.x; j < cols / 4; j += blockDim.x) {
      const float4 e = reinterpret_cast<const float4*>(cache)[j];
      reinterpret_cast<float4*>(dst)[j] = make_float4(e.x * inv, e.y * inv, e.z * inv, e.w * inv);
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) dst[c] = cache[c] * inv;
  }
}
