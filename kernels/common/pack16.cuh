// Building blocks for 16-bit kernels that work on packed pairs: two elements of elem_t
// (bfloat16 or float16) in one 32-bit word, element 2w in the low half, 2w + 1 in the high,
// and the fast float functions such kernels pair them with, up to a pack's exponentials. Used
// by softmax warp_pack16 and common/rows16.cuh (block_pack16, block_hybrid16).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/dtype.cuh"

namespace cb {

constexpr bool kPackedBf16 = std::is_same<elem_t, __nv_bfloat16>::value;
constexpr uint32_t kNegInf2 = kPackedBf16 ? 0xFF80FF80u : 0xFC00FC00u;  // two -inf of elem_t
constexpr float kLog2e = 1.4426950408889634f;  // exp(x) = ex2(x * kLog2e)

// The larger of each pair, packed (max.bf16x2 / max.f16x2: one instruction for two elements).
__device__ __forceinline__ uint32_t max2(uint32_t a, uint32_t b) {
  uint32_t d;
  if constexpr (kPackedBf16) asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  else asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// The two elements of a word as floats.
__device__ __forceinline__ float lo(uint32_t w) {
  if constexpr (kPackedBf16) return __uint_as_float(w << 16);
  else return __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
}
__device__ __forceinline__ float hi(uint32_t w) {
  if constexpr (kPackedBf16) return __uint_as_float(w & 0xffff0000u);
  else return __half2float(__ushort_as_half((unsigned short)(w >> 16)));
}

// Two floats rounded to nearest into one word (one F2FP instruction).
__device__ __forceinline__ uint32_t pack2(float l, float h) {
  uint32_t d;
  if constexpr (kPackedBf16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(h), "f"(l));
  else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(h), "f"(l));
  return d;
}

// 2^x by ex2.approx.ftz (2 ulp; MUFU.EX2): exp(x) is ex2(x * log2e).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1/x by rcp.approx.ftz (1 ulp), no slow path: for an x known to be >= 1 (a softmax row's sum).
__device__ __forceinline__ float rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The exponentials of a pack's 8 elements against a row constant c = -m * log2e:
// e[i] = ex2(x_i * log2e + c), one FFMA and one MUFU.EX2 each (-inf gives 0); returns their sum.
__device__ __forceinline__ float exp_pack(const uint4& v, float c, float (&e)[8]) {
  float s = 0.0f;
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    e[2 * w] = ex2(fmaf(lo(word(v, w)), kLog2e, c));
    e[2 * w + 1] = ex2(fmaf(hi(word(v, w)), kLog2e, c));
    s += e[2 * w] + e[2 * w + 1];
  }
  return s;
}

// Eight floats times inv, rounded to elem_t in pairs: one 16-byte pack.
__device__ __forceinline__ uint4 pack_scaled(const float (&e)[8], float inv) {
  return make_uint4(pack2(e[0] * inv, e[1] * inv), pack2(e[2] * inv, e[3] * inv),
                    pack2(e[4] * inv, e[5] * inv), pack2(e[6] * inv, e[7] * inv));
}

}  // namespace cb
