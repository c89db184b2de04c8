// l2norm's CUDA variants: out = x / max(||x||, 1e-12) along each row, a block per row; the
// planted faults change one template argument.
#pragma once

#include "../rows.cuh"

namespace l2norm {

enum Fault {
  kNone,
  kTail,   // the norm skips the cols % 32 tail (a loop over whole groups of 32)
  kAcc16,  // the sum of squares accumulated in the element type
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
  const long long summed = F == kTail ? cols - cols % 32 : cols;
  const float inv = 1.0f / fmaxf(sqrtf(corpus::sum_of_squares<acc16>(xr, summed, scratch)), 1e-12f);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) corpus::store(yr, c, corpus::load(xr, c) * inv);
}

}  // namespace l2norm
