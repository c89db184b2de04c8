// cudabench:
//   variant: warp
//   entry: reduce_scale_warp
//   block: BLOCK
//   grid: warp_rows4
//   requires: {max_cols: 512}
//   params: {BLOCK: [128, 64, 256, 512]}   # threads a block (its warps take rows)
//   dtypes: [float32, float16, bfloat16]
//   about: a warp per 4 rows held in registers (16-byte packs when aligned; short rows all loaded before any is reduced), max by xor shuffles, one read and one write (seed 000 ReduceScaleWarpKernel)
//
// Each lane keeps up to 4 16-byte packs of its row (4 floats or 8 halves each; cols <= 512:
// longer rows are for block_cached); the number of packs is a template argument picked per
// row length, so no registers go to columns a row does not have. Rows whose cols are not a
// whole number of packs (or an unaligned buffer) take the element-by-element form.
#include "common/reduce.cuh"
#include "common/warp.cuh"

using cb::kPack;  // elements in one 16-byte pack: 4 floats or 8 halves

__device__ __forceinline__ float abs_max(const cb::Vec<elem_t>& v) {
  float m = 0.0f;
#pragma unroll
  for (int e = 0; e < kPack; ++e) m = fmaxf(m, fabsf(v.get(e)));
  return m;
}

// x * (1 / m): one reciprocal a row instead of a division (a multi-instruction sequence) per
// element. In 16-bit the divisions made the kernel SM-bound (ncu, bf16 442368x128: SM 73.6%,
// DRAM 68.1%); two roundings in float are within the op's tolerance (ops/reduce_scale.py).
__device__ __forceinline__ void divide(cb::Vec<elem_t>& v, float m) {
  const float inv = 1.0f / m;
#pragma unroll
  for (int e = 0; e < kPack; ++e) v.set(e, v.get(e) * inv);
}

template <int kPacks>
__device__ __forceinline__ void scale_vec4(elem_t* __restrict__ row, long long cols, int lane) {
  cb::Vec<elem_t> v[kPacks];
  const long long nv = cols / kPack;
  float m = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = lane + 32LL * p;
    v[p].raw = j < nv ? cb::load16(row + j * kPack) : make_uint4(0, 0, 0, 0);
    m = fmaxf(m, abs_max(v[p]));
  }
  m = cb::warp_reduce<cb::Max>(m);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = lane + 32LL * p;
    if (j < nv) {
      divide(v[p], m);
      cb::store16(row + j * kPack, v[p].raw);
    }
  }
}

template <int kPerLane>
__device__ __forceinline__ void scale_scalar(elem_t* __restrict__ row, long long cols, int lane) {
  float v[kPerLane];
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    v[k] = c < cols ? cb::to_float(row[c]) : 0.0f;
    m = fmaxf(m, fabsf(v[k]));
  }
  m = cb::warp_reduce<cb::Max>(m);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    if (c < cols) row[c] = cb::from_float<elem_t>(v[k] * (1.0f / m));
  }
}

// The rows a warp takes (grid rule warp_rows4). 8 rows of halves (the bytes of 4 rows of
// floats) measured slower here than 4, unlike reduce: 79-92 registers a thread, and the
// exponentials or divisions of twice the rows per warp (H100, 2026-11-23, docs/performance.md).
constexpr int kRows = 4;

// Rows of up to 32 packs (128 floats, 256 halves; one pack a lane): the warp's kRows rows are
// loaded together, so each lane has kRows independent 16-byte loads in flight (one row at a time
// left too few bytes in flight: 147 us at 442368x128 float32 on an H200).
__device__ __forceinline__ void scale_4_short_rows(elem_t* __restrict__ x, long long rows,
                                                   long long cols, long long r0, int lane) {
  cb::Vec<elem_t> v[kRows];
  float m[kRows];
  const long long nv = cols / kPack;
#pragma unroll
  for (int k = 0; k < kRows; ++k) {
    const bool in = r0 + k < rows && lane < nv;
    v[k].raw = in ? cb::load16(x + (r0 + k) * cols + lane * kPack) : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int k = 0; k < kRows; ++k) m[k] = cb::warp_reduce<cb::Max>(abs_max(v[k]));
#pragma unroll
  for (int k = 0; k < kRows; ++k)
    if (r0 + k < rows && lane < nv) {
      divide(v[k], m[k]);
      cb::store16(x + (r0 + k) * cols + lane * kPack, v[k].raw);
    }
}

__device__ __forceinline__ void scale_row(elem_t* __restrict__ x, long long cols, long long r,
                                          int lane, bool vec4) {
  elem_t* row = x + r * cols;
  if (vec4) {
    if (cols <= 32 * kPack) scale_vec4<1>(row, cols, lane);
    else if (cols <= 64 * kPack) scale_vec4<2>(row, cols, lane);
    else scale_vec4<4>(row, cols, lane);
  } else {
    if (cols <= 128) scale_scalar<4>(row, cols, lane);
    else if (cols <= 256) scale_scalar<8>(row, cols, lane);
    else scale_scalar<16>(row, cols, lane);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_scale_warp(elem_t* __restrict__ x, long long rows, long long cols) {
  const long long r0 = cb::warp_row() * kRows;
  if (r0 >= rows) return;
  const int lane = cb::lane_id();
  const bool vec4 = cols % kPack == 0 && cb::is_aligned16(x);
  if (vec4 && cols <= 32 * kPack) {
    scale_4_short_rows(x, rows, cols, r0, lane);
    return;
  }
  for (long long r = r0; r < r0 + kRows && r < rows; ++r) scale_row(x, cols, r, lane, vec4);
}
