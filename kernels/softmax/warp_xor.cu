// cudabench:
//   variant: warp_xor
//   entry: softmax_warp_xor
//   block: 128
//   grid: warp_rows4
//   requires: {max_cols: 512}
//   dtypes: [float32, float16, bfloat16]
//   about: a warp per 4 rows held in registers (float4 packs when aligned; rows of up to 128 floats loaded together), max and sum by xor shuffles, no shared memory, one read and one write (seed 002)
#include "common/softmax.cuh"

using cb::kPack;  // elements in a 16-byte pack: 4 floats or 8 halves

// A row of up to 32 x kPerLane elements: lane l holds packs l, l + 32, ... (vec: kPerLane /
// kPack packs of kPack elements) or elements l, l + 32, ... (scalar); max, exponentials and
// sum in float.
template <int kPerLane>
__device__ __forceinline__ void softmax_row(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                            long long cols, int lane, bool vec) {
  static_assert(kPerLane % kPack == 0, "whole packs a lane");
  float v[kPerLane];
  if (vec) {
#pragma unroll
    for (int p = 0; p < kPerLane / kPack; ++p) {
      const long long j = lane + 32LL * p;
      cb::Vec<elem_t> pack;
      pack.raw = j * kPack < cols ? cb::load16(x + j * kPack) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int e = 0; e < kPack; ++e) v[kPack * p + e] = j * kPack < cols ? pack.get(e) : -INFINITY;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const long long c = lane + 32LL * k;
      v[k] = c < cols ? cb::to_float(x[c]) : -INFINITY;
    }
  }
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) m = fmaxf(m, v[k]);
  m = cb::warp_reduce<cb::Max>(m);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    v[k] = __expf(v[k] - m);  // -inf (past the row's end) gives 0
    s += v[k];
  }
  const float inv = 1.0f / cb::warp_reduce<cb::Sum>(s);
  if (vec) {
#pragma unroll
    for (int p = 0; p < kPerLane / kPack; ++p) {
      const long long j = lane + 32LL * p;
      if (j * kPack < cols) {
        cb::Vec<elem_t> pack;
#pragma unroll
        for (int e = 0; e < kPack; ++e) pack.set(e, v[kPack * p + e] * inv);
        cb::store16(out + j * kPack, pack.raw);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const long long c = lane + 32LL * k;
      if (c < cols) out[c] = cb::from_float<elem_t>(v[k] * inv);
    }
  }
}

// The rows a warp takes (grid rule warp_rows4). 8 rows of halves (the bytes of 4 rows of
// floats) measured slower here than 4, unlike reduce: 79-92 registers a thread, and the
// exponentials or divisions of twice the rows per warp (H100, 2026-11-23, docs/performance.md).
constexpr int kRows = 4;

// Rows of up to 32 packs (128 floats, 256 halves; one pack a lane): the warp's kRows rows are
// loaded together, so each lane has kRows independent 16-byte loads in flight, as in reduce's
// short-row mode. Plain loads and stores: streaming them (ld.global.nc.L1::no_allocate,
// __stcs) measured 4% slower at 442368x128 float32 on an H200 (116.2 vs 111.8 us).
__device__ __forceinline__ void softmax_short_rows(const elem_t* __restrict__ x,
                                                     elem_t* __restrict__ out, long long rows,
                                                     long long cols, long long r0, int lane) {
  cb::Vec<elem_t> v[kRows];
  const long long nv = cols / kPack;
#pragma unroll
  for (int k = 0; k < kRows; ++k)
    v[k].raw = r0 + k < rows && lane < nv ? cb::load16(x + (r0 + k) * cols + lane * kPack)
                                          : make_uint4(0, 0, 0, 0);
  float m[kRows], inv[kRows];
#pragma unroll
  for (int k = 0; k < kRows; ++k)
    m[k] = cb::warp_reduce<cb::Max>(lane < nv ? cb::hreduce<cb::Max>(v[k]) : -INFINITY);
#pragma unroll
  for (int k = 0; k < kRows; ++k) inv[k] = lane < nv ? cb::pack_exp_sum(v[k], m[k]) : 0.0f;
#pragma unroll
  for (int k = 0; k < kRows; ++k) inv[k] = 1.0f / cb::warp_reduce<cb::Sum>(inv[k]);
#pragma unroll
  for (int k = 0; k < kRows; ++k)
    if (r0 + k < rows && lane < nv) {
      cb::pack_normalize(v[k], m[k], inv[k]);
      cb::store16(out + (r0 + k) * cols + lane * kPack, v[k].raw);
    }
}

extern "C" __global__ void __launch_bounds__(128)
softmax_warp_xor(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                 long long rows, long long cols, int chunks) {
  const long long r0 = cb::warp_row() * kRows;
  if (r0 >= rows) return;
  const int lane = cb::lane_id();
  const bool vec = cols % kPack == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  if (vec && cols <= 32 * kPack) {
    softmax_short_rows(x, out, rows, cols, r0, lane);
    return;
  }
  for (long long r = r0; r < r0 + kRows && r < rows; ++r) {
    const elem_t* row = x + r * cols;
    elem_t* dst = out + r * cols;
    if (cols <= 32 * kPack) softmax_row<kPack>(row, dst, cols, lane, vec);
    else if (cols <= 256) softmax_row<8>(row, dst, cols, lane, vec);
    else softmax_row<16>(row, dst, cols, lane, vec);
  }
}
