// rmsnorm's CUDA variants: out = x * w / sqrt(mean(x^2) + eps), a block per row; the planted
// faults are `row` with one template argument changed.
#pragma once

#include "../rows.cuh"

namespace rmsnorm {

enum Fault {
  kNone,
  kTail,   // the sum of squares skips the cols % 32 tail (a loop over whole groups of 32)
  kAcc16,  // the sum of squares accumulated in the element type
};

template <int F>
__device__ __forceinline__ void row(const elem_t* __restrict__ x, const elem_t* __restrict__ w,
                                    elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  const long long summed = F == kTail ? cols - cols % 32 : cols;
  const float scale = rsqrtf(corpus::sum_of_squares<acc16>(xr, summed, scratch) / (float)cols + eps);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    corpus::store(yr, c, corpus::load(xr, c) * scale * corpus::load(w, c));
}

}  // namespace rmsnorm
