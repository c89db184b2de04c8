// cudabench:
//   variant: block_smem
//   entry: softmax_block_smem
//   block: BLOCK
//   grid: row_block_smem
//   params: {BLOCK: [256, 128, 512, 1024]}   # threads per row (seed 003 picks it by occupancy)
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the row cached in dynamic shared memory (cols x 4 bytes, up to 48 KiB), block reductions (seed 003 OneFlow SoftmaxBlockSMemImpl)
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_block_smem(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                   long long rows, long long cols, int chunks) {
  extern __shared__ float cache[];  // the row as floats (cols x 4 bytes, the grid rule's)
  __shared__ float scratch[32];
  using cb::kPack;
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  const bool vec = cols % kPack == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  float m = -INFINITY;
  if (vec) {  // 16-byte packs: 4 floats or 8 halves
    for (long long j = threadIdx.x; j < cols / kPack; j += blockDim.x) {
      cb::Vec<elem_t> v;
      v.raw = cb::load16(row + j * kPack);
#pragma unroll
      for (int e = 0; e < kPack; ++e) {
        cache[j * kPack + e] = v.get(e);
        m = fmaxf(m, v.get(e));
      }
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
      cache[c] = cb::to_float(row[c]);
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
  if (vec) {
    for (long long j = threadIdx.x; j < cols / kPack; j += blockDim.x) {
      cb::Vec<elem_t> v;
#pragma unroll
      for (int e = 0; e < kPack; ++e) v.set(e, cache[j * kPack + e] * inv);
      cb::store16(dst + j * kPack, v.raw);
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x)
      dst[c] = cb::from_float<elem_t>(cache[c] * inv);
  }
}
