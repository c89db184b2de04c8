// softmax_rows's CUDA variants: out = exp(x - max) / sum exp(x - max) along each row, a block
// per row: `two_pass` (the max, the sum, then the write; the planted faults change one template
// argument) and `online` (one pass for the max and the sum, rescaling as the max grows).
#pragma once

#include "../rows.cuh"

namespace softmax_rows {

enum Fault {
  kNone,
  kDropLast,  // the sum misses the last term
  kFastExp,   // __expf (fast math): planted, and accepted - the tolerance allows its rounding
  kAcc16,     // the sum accumulated in the element type
};

template <int F>
__device__ __forceinline__ void two_pass(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
                                         long long cols) {
  constexpr bool acc16 = F == kAcc16, fast = F == kFastExp;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  const float m = corpus::row_max(xr, cols, scratch);
  const long long summed = F == kDropLast ? cols - 1 : cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < summed; c += blockDim.x)
    s = corpus::add<acc16>(s, corpus::exp_of<fast>(corpus::load(xr, c) - m));
  const float inv = 1.0f / corpus::block_sum<acc16>(s, scratch);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    corpus::store(yr, c, corpus::exp_of<fast>(corpus::load(xr, c) - m) * inv);
}

// (max, sum of exp(x - max)) of a share of the row; -inf max: an empty share.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  if (a.m == cb::Max::identity()) return b;  // exp(-inf - -inf) would be NaN
  if (b.m == cb::Max::identity()) return a;
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum warp_combine(MaxSum v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = combine(v, MaxSum{__shfl_xor_sync(cb::kFullMask, v.m, o), __shfl_xor_sync(cb::kFullMask, v.s, o)});
  return v;
}

__device__ __forceinline__ void online(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
                                       long long cols) {
  __shared__ float scratch[2][32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  MaxSum a{cb::Max::identity(), 0.0f};
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = corpus::load(xr, c);
    if (v > a.m) {
      a.s = a.s * expf(a.m - v) + 1.0f;  // the first element: 0 * exp(-inf) + 1
      a.m = v;
    } else {
      a.s += expf(v - a.m);
    }
  }
  a = warp_combine(a);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  if (lane == 0) {
    scratch[0][warp] = a.m;
    scratch[1][warp] = a.s;
  }
  __syncthreads();
  a = lane < warps ? MaxSum{scratch[0][lane], scratch[1][lane]} : MaxSum{cb::Max::identity(), 0.0f};
  a = warp_combine(a);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    corpus::store(yr, c, expf(corpus::load(xr, c) - a.m) / a.s);
}

}  // namespace softmax_rows
