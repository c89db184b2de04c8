// logsumexp's CUDA variants: out[i] = max + log(sum exp(x - max)) of each row, a block per row,
// two passes (the max, then the sum); the planted faults change one template argument.
#pragma once

#include "../rows.cuh"

namespace logsumexp {

enum Fault {
  kNone,
  kDropLast,  // the sum misses the last term
  kFastExp,   // __expf (fast math): planted, and accepted - the tolerance allows its rounding
  kAcc16,     // the sum accumulated in the element type
};

template <int F>
__device__ __forceinline__ void row(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
                                    long long cols) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  const float m = corpus::row_max(xr, cols, scratch);
  const long long summed = F == kDropLast ? cols - 1 : cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < summed; c += blockDim.x)
    s = corpus::add<acc16>(s, corpus::exp_of<F == kFastExp>(corpus::load(xr, c) - m));
  s = corpus::block_sum<acc16>(s, scratch);
  if (threadIdx.x == 0) corpus::store(out, row, m + logf(s));
}

}  // namespace logsumexp
