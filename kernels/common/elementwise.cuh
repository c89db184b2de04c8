// Elementwise maps (seed 002): a thread per element, or a thread per 4 elements with one
// 16-byte load and store. The float4 form handles any n: the last n % 4 elements, and
// buffers that are not 16-byte aligned, go one float at a time (seed 002 reads a float4
// wherever idx < N, past the end of the array).
#pragma once

#include "common/warp.cuh"

namespace cb {

struct Add {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct Sigmoid {  // __expf: the fast exponential; about 6 ulp for |x| <= 4
  __device__ __forceinline__ float operator()(float x) const { return 1.0f / (1.0f + __expf(-x)); }
};
struct Relu {
  __device__ __forceinline__ float operator()(float x) const { return fmaxf(x, 0.0f); }
};

__device__ __forceinline__ long long thread_index() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

template <class F>
__device__ __forceinline__ void map(const float* __restrict__ x, float* __restrict__ out,
                                    long long n, F f) {
  const long long i = thread_index();
  if (i < n) out[i] = f(x[i]);
}

template <class F>
__device__ __forceinline__ void map(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ out, long long n, F f) {
  const long long i = thread_index();
  if (i < n) out[i] = f(a[i], b[i]);
}

template <class F>
__device__ __forceinline__ void map_vec4(const float* __restrict__ x, float* __restrict__ out,
                                         long long n, F f) {
  const long long i = 4 * thread_index();
  if (i >= n) return;
  if (i + 3 < n && is_aligned16(x) && is_aligned16(out)) {
    float4 v = *reinterpret_cast<const float4*>(x + i);
    v.x = f(v.x); v.y = f(v.y); v.z = f(v.z); v.w = f(v.w);
    *reinterpret_cast<float4*>(out + i) = v;
    return;
  }
  for (long long k = i; k < n && k < i + 4; ++k) out[k] = f(x[k]);
}

template <class F>
__device__ __forceinline__ void map_vec4(const float* __restrict__ a,
                                         const float* __restrict__ b, float* __restrict__ out,
                                         long long n, F f) {
  const long long i = 4 * thread_index();
  if (i >= n) return;
  if (i + 3 < n && is_aligned16(a) && is_aligned16(b) && is_aligned16(out)) {
    const float4 u = *reinterpret_cast<const float4*>(a + i);
    const float4 v = *reinterpret_cast<const float4*>(b + i);
    *reinterpret_cast<float4*>(out + i) =
        make_float4(f(u.x, v.x), f(u.y, v.y), f(u.z, v.z), f(u.w, v.w));
    return;
  }
  for (long long k = i; k < n && k < i + 4; ++k) out[k] = f(a[k], b[k]);
}

}  // namespace cb
