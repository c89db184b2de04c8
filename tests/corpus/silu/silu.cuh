// silu's CUDA variants: out = x / (1 + exp(-x)), a thread per element; the forms differ by one
// template argument.
#pragma once

#include "../rows.cuh"
#include "common/warp.cuh"

namespace silu {

enum Form {
  kExpf,     // x / (1 + expf(-x))
  kFastExp,  // x / (1 + __expf(-x)): fast math, accepted (the tolerance allows its rounding)
  kHalfExp,  // planted: exp at half precision, hexp of -x rounded to __half
};

template <int F>
__device__ __forceinline__ void map(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  const long long i = cb::thread_index();
  if (i >= n) return;
  const float v = corpus::load(x, i);
  float e;
  if (F == kFastExp) e = __expf(-v);
  else if (F == kHalfExp) e = __half2float(hexp(__float2half_rn(-v)));
  else e = expf(-v);
  corpus::store(out, i, v / (1.0f + e));
}

}  // namespace silu
