// Elementwise maps (seed 002): a thread per element, or a thread per 16 bytes (4 floats or 8
// halves) with one load and one store. The vector form handles any n: the last n % kPack
// elements, and buffers that are not 16-byte aligned, go one element at a time (seed 002
// reads a float4 wherever idx < N, past the end of the array). Arithmetic is in float.
#pragma once

#include "common/dtype.cuh"
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

template <class F>
__device__ __forceinline__ void map(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                    long long n, F f) {
  const long long i = thread_index();
  if (i < n) out[i] = from_float<elem_t>(f(to_float(x[i])));
}

template <class F>
__device__ __forceinline__ void map(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                    elem_t* __restrict__ out, long long n, F f) {
  const long long i = thread_index();
  if (i < n) out[i] = from_float<elem_t>(f(to_float(a[i]), to_float(b[i])));
}

// A thread per 16 bytes: kPack elements (4 floats, 8 halves) in one load and one store.
template <class F>
__device__ __forceinline__ void map_vec4(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                         long long n, F f) {
  const long long i = kPack * thread_index();
  if (i >= n) return;
  if (i + kPack <= n && is_aligned16(x) && is_aligned16(out)) {
    Vec<elem_t> v;
    v.raw = load16(x + i);
#pragma unroll
    for (int e = 0; e < kPack; ++e) v.set(e, f(v.get(e)));
    store16(out + i, v.raw);
    return;
  }
  for (long long k = i; k < n && k < i + kPack; ++k) out[k] = from_float<elem_t>(f(to_float(x[k])));
}

template <class F>
__device__ __forceinline__ void map_vec4(const elem_t* __restrict__ a,
                                         const elem_t* __restrict__ b, elem_t* __restrict__ out,
                                         long long n, F f) {
  const long long i = kPack * thread_index();
  if (i >= n) return;
  if (i + kPack <= n && is_aligned16(a) && is_aligned16(b) && is_aligned16(out)) {
    Vec<elem_t> u, v;
    u.raw = load16(a + i);
    v.raw = load16(b + i);
#pragma unroll
    for (int e = 0; e < kPack; ++e) u.set(e, f(u.get(e), v.get(e)));
    store16(out + i, u.raw);
    return;
  }
  for (long long k = i; k < n && k < i + kPack; ++k)
    out[k] = from_float<elem_t>(f(to_float(a[k]), to_float(b[k])));
}

}  // namespace cb
