// gelu's CUDA variants: out = 0.5 x (1 + erf(x / sqrt 2)), a thread per element; the forms
// differ by one template argument.
#pragma once

#include "../rows.cuh"
#include "common/warp.cuh"

namespace gelu {

enum Form {
  kErf,   // 0.5 x (1 + erff(x / sqrt 2)): torch's formula
  kErfc,  // 0.5 x erfcf(-x / sqrt 2): no cancellation for x << 0
  kTanh,  // planted: the tanh approximation 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
};

template <int F>
__device__ __forceinline__ void map(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  const long long i = cb::thread_index();
  if (i >= n) return;
  const float v = corpus::load(x, i);
  float y;
  if (F == kErfc) y = 0.5f * v * erfcf(-v * 0.70710678118654752f);
  else if (F == kTanh) y = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  else y = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  corpus::store(out, i, y);
}

}  // namespace gelu
