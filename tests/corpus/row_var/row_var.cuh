// row_var's CUDA variants: the population variance of each row, a block per row, two passes
// (the mean, then the squared deviations); the planted faults change one template argument.
#pragma once

#include "../rows.cuh"

namespace row_var {

enum Fault {
  kNone,
  kN1,     // over n - 1 (the sample variance)
  kAcc16,  // both sums accumulated in the element type
};

template <int F>
__device__ __forceinline__ void row(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
                                    long long cols) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) s = corpus::add<acc16>(s, corpus::load(xr, c));
  const float mean = corpus::block_sum<acc16>(s, scratch) / (float)cols;
  float q = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = corpus::load(xr, c) - mean;
    q = corpus::add<acc16>(q, d * d);
  }
  q = corpus::block_sum<acc16>(q, scratch);
  if (threadIdx.x == 0) corpus::store(out, row, q / (float)(F == kN1 && cols > 1 ? cols - 1 : cols));
}

}  // namespace row_var
