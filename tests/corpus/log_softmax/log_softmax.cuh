// log_softmax's CUDA variants: out = (x - max) - log(sum exp(x - max)) along each row, a block
// per row, two passes and the write; the planted faults change one template argument.
#pragma once

#include "../rows.cuh"

namespace log_softmax {

enum Fault {
  kNone,
  kDropLast,  // the sum misses the last term
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
  elem_t* yr = out + row * cols;
  const float m = corpus::row_max(xr, cols, scratch);
  const long long summed = F == kDropLast ? cols - 1 : cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < summed; c += blockDim.x)
    s = corpus::add<acc16>(s, expf(corpus::load(xr, c) - m));
  const float lse = logf(corpus::block_sum<acc16>(s, scratch));
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) corpus::store(yr, c, (corpus::load(xr, c) - m) - lse);
}

}  // namespace log_softmax
