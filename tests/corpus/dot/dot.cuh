// dot's CUDA variants: out[i] = sum_j x[i, j] y[i, j], a block per row; the planted faults are
// `row` with one template argument changed.
#pragma once

#include "../rows.cuh"

namespace dot {

enum Fault {
  kNone,
  kTail,   // skips the cols % 32 tail (a loop over whole groups of 32)
  kAcc16,  // the products accumulated in the element type
};

template <int F>
__device__ __forceinline__ void row(const elem_t* __restrict__ x, const elem_t* __restrict__ y,
                                    elem_t* __restrict__ out, long long rows, long long cols) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  const elem_t* yr = y + row * cols;
  const long long summed = F == kTail ? cols - cols % 32 : cols;
  float s = 0.0f;
  for (long long c = threadIdx.x; c < summed; c += blockDim.x)
    s = corpus::add<acc16>(s, corpus::load(xr, c) * corpus::load(yr, c));
  s = corpus::block_sum<acc16>(s, scratch);
  if (threadIdx.x == 0) corpus::store(out, row, s);
}

}  // namespace dot
