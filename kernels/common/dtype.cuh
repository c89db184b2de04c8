// The element type of a kernel file. cudabench compiles a file once per dtype its header
// declares, with -DCB_T=float, __half or __nv_bfloat16; the kernels read and write `elem_t`
// and compute in float (as CUB and torch do for half and bfloat16: accumulating in a 16-bit
// type loses the sum of a long row). A file compiled without CB_T is float32.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef CB_T
#define CB_T float
#endif
using elem_t = CB_T;

namespace cb {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// 16 bytes of elements, the widest load a thread can issue: 4 floats or 8 halves/bfloat16s.
// The vector variants move 16 bytes per access whatever the element size.
template <class T = elem_t>
struct Vec {
  static constexpr int kSize = 16 / sizeof(T);
  uint4 raw;
  __device__ __forceinline__ float get(int i) const {
    return to_float(reinterpret_cast<const T*>(&raw)[i]);
  }
  __device__ __forceinline__ void set(int i, float v) {
    reinterpret_cast<T*>(&raw)[i] = from_float<T>(v);
  }
};
constexpr int kPack = Vec<elem_t>::kSize;  // elements of elem_t in 16 bytes

// A 16-byte load for data read once: through the read-only path (.nc: the data is not
// written while the kernel runs) without allocating in L1, so a stream of them does not churn
// L1. On an H200 this took a 442368x128 float32 row sum from 54.4 to 51.2 us.
__device__ __forceinline__ uint4 load16_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 load16(const void* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void store16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }
// A 16-byte store marked evict-first (st.global.cs): output written once and not read back.
__device__ __forceinline__ void store16_stream(void* p, uint4 v) { __stcs(reinterpret_cast<uint4*>(p), v); }
// The plain or the streaming form, chosen at compile time (a variant's STREAM parameter).
template <bool kStream>
__device__ __forceinline__ uint4 load16_as(const void* p) {
  return kStream ? load16_stream(p) : load16(p);
}
template <bool kStream>
__device__ __forceinline__ void store16_as(void* p, uint4 v) {
  if (kStream) store16_stream(p, v);
  else store16(p, v);
}
// Word w (0-3) of a 16-byte vector; w a compile-time constant in an unrolled loop.
__host__ __device__ inline uint32_t word(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}
// 16 bytes global -> shared, past L1 and registers (cp.async.cg, sm_80+), in flight until
// cp_async_wait_all (softmax block_hybrid and block_hybrid16).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// The loads of a variant that makes the cache hint a parameter (STREAM_LOADS: 0 plain, 1 the
// streaming form above). On an H200 the read-only, no-L1-allocate loads sped up pure reads (a
// row sum) but slowed read + write mixes by 3-11% (add, a copy), so it is a choice a search
// makes, not a default.
#ifndef STREAM_LOADS
#define STREAM_LOADS 0
#endif
__device__ __forceinline__ uint4 load16_hinted(const void* p) { return load16_as<STREAM_LOADS != 0>(p); }

}  // namespace cb
