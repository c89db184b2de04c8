// cudabench:
//   variant: warp_pack16
//   entry: softmax_warp_pack16
//   block: BLOCK
//   grid: warp_rows4
//   params:
//     BLOCK: [256, 128, 512]
//     OCC: [0, 1536, 2048]   # threads an SM the launch bounds size registers for (0: none)
//     STREAM: [0, 1]         # 1: ld.global.nc.L1::no_allocate loads and st.global.cs stores
//   requires: {max_cols: 512}
//   dtypes: [bfloat16, float16]
//   about: 16-bit softmax of short rows, a warp per 4 rows split into lane groups (8 lanes a row up to 128 columns, so one warp's shuffles serve all 4 rows; 16 lanes up to 256; 32 up to 512), every 16-byte load of the warp issued before any arithmetic, max taken packed (max.bf16x2 / max.f16x2), one FFMA + ex2.approx a element on x*log2e, the exponentials kept in float registers (no second exponential), sums in float; scalar fallback for rows not 16-byte aligned. 442368x128 on an H100 (2026-11-25) 78.0 us bf16 and fp16, 86.6% of peak, 1.34x torch, the time of a cudaMemcpy of the same bytes (78.2 us); warp_xor 125.2 / 118.1 us
//
// Why (docs/performance.md, "SM-bound"): warp_xor in 16-bit leaves half a warp idle on a
// 128-column row (16 packs of 8) and computes each exponential twice (once for the sum, once
// for the store: 16-bit packs cannot hold the float exponentials), so its MUFU and issue load
// per byte doubled twice over float32. Here a row of 128 halves is 8 lanes x 2 packs: all 32
// lanes work, 3 shuffle levels (not 5) serve the warp's 4 rows at once, and each lane keeps its
// 16 exponentials in float registers between the sum and the store.
//
// Precision: exp(x - m) = 2^(x*log2e - m*log2e), the exponent by one FFMA from the rounded
// constant -m*log2e (a factor common to the whole row, which the normalisation cancels) and
// ex2.approx.ftz (2 ulp); the sum and the reciprocal in float, so the float result is a few
// ulp of float32 off before the one rounding to 16 bits.
#include "common/pack16.cuh"
#include "common/softmax.cuh"

static_assert(sizeof(elem_t) == 2, "warp_pack16 is for float16 and bfloat16");

#ifndef BLOCK
#define BLOCK 256
#endif
// OCC: threads an SM the launch bounds ask registers for (0: no bound, ptxas takes 60 and
// 32 warps an SM fit; 1536: 40 registers, the 128-column path's need without a spill; 2048:
// 32, which spills). At 442368x128 on an H100 (2026-11-25, one run, all 12 configurations of
// BLOCK x OCC x STREAM within 78.0-80.2 us): OCC=0 0.6-1.0 us ahead of 1536 at every block in
// both dtypes, BLOCK 256 ahead of 128 and 512 by 0.2-0.5 us (under the 1.8% spread), STREAM=1
// 1.0-1.4 us behind STREAM=0 everywhere (as for warp_xor and block_reg in read + write mixes).
#ifndef OCC
#define OCC 0
#endif
#define MINB (OCC / BLOCK > 1 ? OCC / BLOCK : 1)  // OCC=0: a plain __launch_bounds__(BLOCK, 1)
#ifndef STREAM
#define STREAM 0
#endif

namespace {

using cb::kLog2e;
using cb::kNegInf2;
constexpr int kRows = 4;                                            // rows a warp (warp_rows4)

using cb::ex2;  // the packed-pair and fast-float blocks (kernels/common/pack16.cuh)
using cb::hi;
using cb::lo;
using cb::max2;
using cb::rcp;

using cb::word;

// NR rows from r0 in lane groups of L lanes, each lane K packs of 8 elements a row: G = 32 / L
// rows at once, P = NR / G passes. Every load of every pass is issued first; then each pass
// reduces (xor shuffles below L stay inside the group) and stores.
template <int L, int K, int NR>
__device__ __forceinline__ void rows_packed(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                            long long rows, long long cols, long long r0,
                                            int lane) {
  constexpr int G = 32 / L, P = NR / G;
  static_assert(P * G == NR, "whole passes");
  const int g = lane / L, q = lane % L;
  const int nv = (int)(cols / 8);  // packs a row (cols <= 512 here)
  uint4 raw[P][K];
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const long long r = r0 + p * G + g;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int j = q + L * k;
      raw[p][k] = r < rows && j < nv ? cb::load16_as<STREAM != 0>(x + r * cols + j * 8)
                                     : make_uint4(kNegInf2, kNegInf2, kNegInf2, kNegInf2);
    }
  }
#pragma unroll
  for (int p = 0; p < P; ++p) {
    const long long r = r0 + p * G + g;
    uint32_t m2 = raw[p][0].x;
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int w = 0; w < 4; ++w)
        if (k || w) m2 = max2(m2, word(raw[p][k], w));
#pragma unroll
    for (int off = L / 2; off > 0; off >>= 1) m2 = max2(m2, __shfl_xor_sync(cb::kFullMask, m2, off));
    const float m = fmaxf(lo(m2), hi(m2));
    const float c = -m * kLog2e;  // -inf past the rows: NaN below, never stored
    float e[K][8];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) s += cb::exp_pack(raw[p][k], c, e[k]);  // -inf (masked) gives 0
#pragma unroll
    for (int off = L / 2; off > 0; off >>= 1) s += __shfl_xor_sync(cb::kFullMask, s, off);
    const float inv = rcp(s);
    if (r < rows) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int j = q + L * k;
        if (j < nv) {
          const uint4 o = cb::pack_scaled(e[k], inv);
          cb::store16_as<STREAM != 0>(out + r * cols + j * 8, o);
        }
      }
    }
  }
}

// Any alignment, cols <= 32 * kPerLane: one row a time over the whole warp, element by element.
template <int kPerLane>
__device__ __forceinline__ void row_scalar(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                          long long cols, int lane) {
  float v[kPerLane];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    v[k] = c < cols ? cb::to_float(x[c]) : -INFINITY;
    m = fmaxf(m, v[k]);
  }
  m = cb::warp_reduce<cb::Max>(m);
  const float c0 = -m * kLog2e;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    v[k] = ex2(fmaf(v[k], kLog2e, c0));
    s += v[k];
  }
  const float inv = rcp(cb::warp_reduce<cb::Sum>(s));
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    if (c < cols) out[c] = cb::from_float<elem_t>(v[k] * inv);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK, MINB)
softmax_warp_pack16(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                    long long rows, long long cols, int chunks) {
  const long long r0 = cb::warp_row() * kRows;
  if (r0 >= rows) return;  // whole warps only: the shuffles below need all 32 lanes
  const int lane = cb::lane_id();
  const bool vec = cols % 8 == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  if (vec) {
    if (cols <= 128) {
      rows_packed<8, 2, kRows>(x, out, rows, cols, r0, lane);  // the warp's 4 rows at once
    } else if (cols <= 256) {
      rows_packed<16, 2, kRows>(x, out, rows, cols, r0, lane);  // 2 passes of 2 rows
    } else {  // a row at a time: all 4 rows' packs at once would spill
#pragma unroll 1
      for (int h = 0; h < kRows; ++h) rows_packed<32, 2, 1>(x, out, rows, cols, r0 + h, lane);
    }
    return;
  }
  for (long long r = r0; r < r0 + kRows && r < rows; ++r) {
    if (cols <= 128) row_scalar<4>(x + r * cols, out + r * cols, cols, lane);
    else if (cols <= 256) row_scalar<8>(x + r * cols, out + r * cols, cols, lane);
    else row_scalar<16>(x + r * cols, out + r * cols, cols, lane);
  }
}
