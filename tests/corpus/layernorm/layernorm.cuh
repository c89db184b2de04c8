// layernorm's CUDA variants: out = (x - mean) / sqrt(var + eps) * w + b, a block per row.
// `two_pass` (block.cu and the planted faults bug_*.cu, each one template argument away from
// it) and `welford` (welford.cu: torch's one-pass way).
#pragma once

#include "../rows.cuh"

namespace layernorm {

enum Fault {
  kNone,
  kVarN1,       // the variance over n - 1 (the sample variance)
  kEpsOutside,  // 1 / (sqrt(var) + eps) instead of 1 / sqrt(var + eps)
  kNoBias,      // forgets + b
  kAcc16,       // both sums accumulated in the element type
};

template <int F>
__device__ __forceinline__ void two_pass(const elem_t* __restrict__ x, const elem_t* __restrict__ w,
                                         const elem_t* __restrict__ b, elem_t* __restrict__ out,
                                         long long rows, long long cols, float eps) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;  // the whole block: the grid is one block per row
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) s = corpus::add<acc16>(s, corpus::load(xr, c));
  const float mean = corpus::block_sum<acc16>(s, scratch) / (float)cols;
  float q = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = corpus::load(xr, c) - mean;
    q = corpus::add<acc16>(q, d * d);
  }
  const float ss = corpus::block_sum<acc16>(q, scratch);
  const float var = ss / (float)(F == kVarN1 && cols > 1 ? cols - 1 : cols);
  const float rstd = F == kEpsOutside ? 1.0f / (sqrtf(var) + eps) : rsqrtf(var + eps);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    float y = (corpus::load(xr, c) - mean) * rstd * corpus::load(w, c);
    if (F != kNoBias) y += corpus::load(b, c);
    corpus::store(yr, c, y);
  }
}

// (count, mean, M2) of a share of the row, and Chan et al.'s combination of two shares.
struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ Stats combine(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float delta = b.mean - a.mean;
  const float fb = b.n / n;
  return {n, a.mean + delta * fb, a.m2 + b.m2 + delta * delta * a.n * fb};
}

__device__ __forceinline__ Stats warp_combine(Stats s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const Stats other{__shfl_xor_sync(cb::kFullMask, s.n, o), __shfl_xor_sync(cb::kFullMask, s.mean, o),
                      __shfl_xor_sync(cb::kFullMask, s.m2, o)};
    s = combine(s, other);
  }
  return s;
}

// One pass: Welford's update per thread, then Chan's combination over the warp and the block
// (as torch's layer norm kernels); the variance is M2 / n.
__device__ __forceinline__ void welford(const elem_t* __restrict__ x, const elem_t* __restrict__ w,
                                        const elem_t* __restrict__ b, elem_t* __restrict__ out,
                                        long long rows, long long cols, float eps) {
  __shared__ float scratch[3][32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  Stats s{0.0f, 0.0f, 0.0f};
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = corpus::load(xr, c);
    s.n += 1.0f;
    const float delta = v - s.mean;
    s.mean += delta / s.n;
    s.m2 += delta * (v - s.mean);
  }
  s = warp_combine(s);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  if (lane == 0) {
    scratch[0][warp] = s.n;
    scratch[1][warp] = s.mean;
    scratch[2][warp] = s.m2;
  }
  __syncthreads();
  s = lane < warps ? Stats{scratch[0][lane], scratch[1][lane], scratch[2][lane]} : Stats{0.0f, 0.0f, 0.0f};
  s = warp_combine(s);
  // lane 0's (the same in every warp): combine(a, b) and combine(b, a) may differ in the last bit
  s.mean = __shfl_sync(cb::kFullMask, s.mean, 0);
  s.m2 = __shfl_sync(cb::kFullMask, s.m2, 0);
  const float rstd = rsqrtf(s.m2 / (float)cols + eps);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    corpus::store(yr, c, (corpus::load(xr, c) - s.mean) * rstd * corpus::load(w, c) + corpus::load(b, c));
}

}  // namespace layernorm
