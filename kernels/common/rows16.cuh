// A softmax row of 16-bit elements (bfloat16 or float16) handled by one block, read once and
// written once: the building blocks of softmax block_pack16 (rows of a few thousand columns,
// the row in registers) and block_hybrid16 (rows of up to 32768, part in registers, part in
// shared memory). Packed-pair arithmetic as in warp_pack16 (kernels/common/pack16.cuh).
//
// A row of any length and any start: its 16-byte packs start at the first 16-byte boundary
// of the row (`head` elements before it, 0-7, when cols x 2 bytes is not a multiple of 16 the
// rows start anywhere), then `nv` whole packs, then a `tail` of 0-7 elements. Thread t holds
// packs t, t + BLOCK, t + 2 BLOCK, ... of the body, and threads 0 .. head + tail - 1 one
// scalar element each (the head's, then the tail's). x and out must stand at the same offset
// from a 16-byte boundary (they do for every array the runner makes); otherwise, and for
// rows longer than a kernel's registers and shared memory hold, `row_fallback` reads the row
// twice, element by element.
//
// The row's max is taken on packed pairs (max.bf16x2 / max.f16x2), then over the block (warp
// shuffles, one float a warp in shared memory, one barrier); each element's exponential is
// ex2.approx(x * log2e - m * log2e), one FFMA and one MUFU.EX2, against the one row constant
// -m * log2e (its rounding is a factor common to the whole row, which the normalisation
// cancels); the sum in float over the block (a second barrier); the reciprocal by rcp.approx.
#pragma once

#include <cstdint>

#include "common/pack16.cuh"
#include "common/softmax.cuh"
#include "common/warp.cuh"

static_assert(sizeof(elem_t) == 2, "rows16.cuh is for float16 and bfloat16");

namespace cb {
namespace rows16 {

// Where a row's 16-byte packs are. `ok` false: x and out are not at the same offset from a
// 16-byte boundary, so no pack of x meets a pack of out (the fallback's case).
struct Span {
  bool ok;
  int head;  // elements before the first 16-byte boundary (at most 7, at most cols)
  int nv;    // whole packs after them
  int tail;  // elements after the packs (at most 7)
};

__host__ __device__ inline Span span(std::uintptr_t row, std::uintptr_t dst, long long cols) {
  Span s{false, 0, 0, 0};
  const unsigned a = (unsigned)(row & 15u);
  if (a != (unsigned)(dst & 15u) || (a & 1u)) return s;
  long long head = (long long)((16u - a) & 15u) / 2;
  if (head > cols) head = cols;
  const long long rest = cols - head;
  s.ok = true;
  s.head = (int)head;
  s.nv = (int)(rest / 8);
  s.tail = (int)(rest % 8);
  return s;
}

// The element index in its row of thread t's scalar (head or tail) element, or -1.
__host__ __device__ inline int scalar_index(const Span& s, int t) {
  if (t < s.head) return t;
  if (t < s.head + s.tail) return s.head + 8 * s.nv + (t - s.head);
  return -1;
}

__device__ __forceinline__ uint32_t max_pack(uint32_t m2, const uint4& v) {
  return max2(max2(m2, v.x), max2(max2(v.y, v.z), v.w));
}

// The sum of exp over a pack: exp_pack's (pack16.cuh), without keeping the exponentials
// (written out: through exp_pack, block_hybrid16's PTX came out different).
__device__ __forceinline__ float exp_sum_pack(const uint4& v, float c) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    s += ex2(fmaf(lo(w[k]), kLog2e, c)) + ex2(fmaf(hi(w[k]), kLog2e, c));
  return s;
}

// The pack's softmax outputs: ex2(x * log2e + c) * inv, rounded to elem_t in pairs.
__device__ __forceinline__ uint4 normalize_pack(const uint4& v, float c, float inv) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  uint32_t o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    o[k] = pack2(ex2(fmaf(lo(w[k]), kLog2e, c)) * inv, ex2(fmaf(hi(w[k]), kLog2e, c)) * inv);
  return make_uint4(o[0], o[1], o[2], o[3]);
}

// The block's Op (Max or Sum, reduce.cuh) of v, in every thread: warp_reduce, one float a
// warp through `red`, then a butterfly over the kBlock / 32 warps' floats, sized at compile
// time; `red` holds 32 floats used by this call alone (a second call with other floats needs
// no barrier before it).
template <int kBlock, class Op>
__device__ __forceinline__ float block_all(float v, float* red) {
  constexpr int kWarps = kBlock / 32;
  static_assert((kWarps & (kWarps - 1)) == 0, "block_all: a power of two of warps");
  v = warp_reduce<Op>(v);
  if (kWarps == 1) return v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < kWarps ? red[lane] : Op::identity();
#pragma unroll
  for (int off = kWarps / 2; off > 0; off >>= 1) v = Op::combine(v, __shfl_xor_sync(kFullMask, v, off));
  return __shfl_sync(kFullMask, v, 0);
}

// One row, read once and written once. Thread t's body packs are j = t + kBlock * p for
// p < kPacks: the first kReg in registers (loaded with plain or streaming 16-byte loads), the
// others copied by cp.async into its own slots shared[(p - kReg) * kBlock + t] (only this
// thread reads them: no barrier, only its own wait). The cp.async copies are issued first,
// then the register loads, then the scalar element: the whole row is in flight before any
// arithmetic. kKeep: the register packs' exponentials stay in float registers between the
// sum and the store (else they are computed again, as the shared packs' always are).
template <int kBlock, int kPacks, int kReg, bool kKeep, bool kStream>
__device__ __forceinline__ void row(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                   const Span& s, uint4* shared, float* red) {
  static_assert(kReg <= kPacks, "register packs are among the packs");
  constexpr int kShared = kPacks - kReg;
  const int t = threadIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(x + s.head);
  uint4* dst = reinterpret_cast<uint4*>(out + s.head);
#pragma unroll
  for (int p = 0; p < kShared; ++p) {
    const int j = t + kBlock * (kReg + p);
    if (j < s.nv) cp_async16(&shared[p * kBlock + t], &src[j]);
  }
  uint4 v[kReg > 0 ? kReg : 1];
#pragma unroll
  for (int p = 0; p < kReg; ++p) {
    const int j = t + kBlock * p;
    v[p] = j < s.nv ? load16_as<kStream>(&src[j]) : make_uint4(kNegInf2, kNegInf2, kNegInf2, kNegInf2);
  }
  const int xi = scalar_index(s, t);
  const float xe = xi >= 0 ? to_float(x[xi]) : -INFINITY;

  uint32_t m2 = kNegInf2;
#pragma unroll
  for (int p = 0; p < kReg; ++p) m2 = max_pack(m2, v[p]);  // absent packs hold -inf
  if (kShared > 0) cp_async_wait_all();  // this thread's shared packs have landed
#pragma unroll 2  // two shared packs at a time: all at once spilled at 32 registers
  for (int p = 0; p < kShared; ++p)
    if (t + kBlock * (kReg + p) < s.nv) m2 = max_pack(m2, shared[p * kBlock + t]);
  const float m = block_all<kBlock, Max>(fmaxf(fmaxf(lo(m2), hi(m2)), xe), red);
  const float c = -m * kLog2e;

  float e[kKeep && kReg > 0 ? kReg : 1][8];  // kKeep: the register packs' exponentials
  float sum = 0.0f;
#pragma unroll
  for (int p = 0; p < kReg; ++p) {
    if constexpr (kKeep) {
      sum += exp_pack(v[p], c, e[p]);  // -inf (absent) gives 0
    } else {
      sum += exp_sum_pack(v[p], c);
    }
  }
#pragma unroll 2  // two shared packs at a time: all at once spilled at 32 registers
  for (int p = 0; p < kShared; ++p)
    if (t + kBlock * (kReg + p) < s.nv) sum += exp_sum_pack(shared[p * kBlock + t], c);
  const float ee = ex2(fmaf(xe, kLog2e, c));  // 0 for no element (-inf)
  sum += ee;
  const float inv = rcp(block_all<kBlock, Sum>(sum, red + 32));

#pragma unroll
  for (int p = 0; p < kReg; ++p) {
    const int j = t + kBlock * p;
    if (j < s.nv) {
      uint4 o;
      if constexpr (kKeep) o = pack_scaled(e[p], inv);
      else o = normalize_pack(v[p], c, inv);
      store16_as<kStream>(&dst[j], o);
    }
  }
#pragma unroll 2  // two shared packs at a time: all at once spilled at 32 registers
  for (int p = 0; p < kShared; ++p) {
    const int j = t + kBlock * (kReg + p);
    if (j < s.nv) store16_as<kStream>(&dst[j], normalize_pack(shared[p * kBlock + t], c, inv));
  }
  if (xi >= 0) out[xi] = from_float<elem_t>(ee * inv);
}

// Any row, any alignment: an online (max, sum) pass over the row, then a pass that writes
// (the row read twice; kept for the cases the fast path does not take). `red` holds 64 floats.
__device__ __forceinline__ void row_fallback(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                             long long cols, float* red) {
  MaxSum acc = empty_max_sum();
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) {
    const float xi = to_float(x[i]);
    if (xi != -INFINITY) acc = push(acc, xi);  // exp(-inf - -inf) would be NaN
  }
  const MaxSum all = block_combine(acc, red);
  const float inv = 1.0f / all.sum;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x)
    out[i] = from_float<elem_t>(__expf(to_float(x[i]) - all.max) * inv);
}

}  // namespace rows16
}  // namespace cb
