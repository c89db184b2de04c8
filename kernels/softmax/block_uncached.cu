// cudabench:
//   variant: block_uncached
//   entry: softmax_block_uncached
//   block: BLOCK
//   grid: row_block
//   requires: {max_cols: 1048576}
//   params: {BLOCK: [1024, 256, 512]}   # threads per row (seed 003 picks it by occupancy)
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row for rows too long for shared memory, online max and sum in one pass, a second pass writes (seed 003 OneFlow SoftmaxBlockUncachedImpl)
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_block_uncached(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                       long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  using cb::kPack;
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  const bool vec = cols % kPack == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  cb::MaxSum acc = cb::empty_max_sum();
  if (vec) {  // 16-byte packs: 4 floats or 8 halves
    for (long long j = threadIdx.x; j < cols / kPack; j += blockDim.x) {
      cb::Vec<elem_t> v;
      v.raw = cb::load16(row + j * kPack);
#pragma unroll
      for (int e = 0; e < kPack; ++e) acc = cb::push(acc, v.get(e));
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) acc = cb::push(acc, cb::to_float(row[c]));
  }
  acc = cb::block_combine(acc, scratch);
  const float m = acc.max, inv = 1.0f / acc.sum;
  if (vec) {
    for (long long j = threadIdx.x; j < cols / kPack; j += blockDim.x) {
      cb::Vec<elem_t> v;
      v.raw = cb::load16(row + j * kPack);
      cb::pack_normalize(v, m, inv);
      cb::store16(dst + j * kPack, v.raw);
    }
  } else {
    for (long long c = threadIdx.x; c < cols; c += blockDim.x)
      dst[c] = cb::from_float<elem_t>(__expf(cb::to_float(row[c]) - m) * inv);
  }
}
