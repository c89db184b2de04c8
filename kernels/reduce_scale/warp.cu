// cudabench:
//   variant: warp
//   entry: reduce_scale_warp
//   block: 128
//   grid: warp_rows4
//   requires: {max_cols: 512}
//   about: a warp per 4 rows held in registers (float4 packs when aligned; rows of up to 128 floats all loaded before any is reduced), max by xor shuffles, one read and one write (seed 000 ReduceScaleWarpKernel)
//
// Each lane keeps up to 4 float4 packs of its row (cols <= 512; longer rows are for
// block_cached); the number of packs is a template argument picked per row length, so no
// registers go to columns a row does not have. Rows whose cols % 4 != 0 (or an unaligned
// buffer) take the float-by-float form.
#include "common/reduce.cuh"
#include "common/warp.cuh"

template <int kPacks>
__device__ __forceinline__ void scale_vec4(float* __restrict__ row, long long cols, int lane) {
  float4 v[kPacks];
  const long long n4 = cols / 4;
  float m = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = lane + 32LL * p;
    v[p] = j < n4 ? reinterpret_cast<const float4*>(row)[j] : make_float4(0.f, 0.f, 0.f, 0.f);
    m = fmaxf(m, fmaxf(fmaxf(fabsf(v[p].x), fabsf(v[p].y)), fmaxf(fabsf(v[p].z), fabsf(v[p].w))));
  }
  m = cb::warp_reduce<cb::Max>(m);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = lane + 32LL * p;
    if (j < n4)
      reinterpret_cast<float4*>(row)[j] = make_float4(v[p].x / m, v[p].y / m, v[p].z / m, v[p].w / m);
  }
}

template <int kPerLane>
__device__ __forceinline__ void scale_scalar(float* __restrict__ row, long long cols, int lane) {
  float v[kPerLane];
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    v[k] = c < cols ? row[c] : 0.0f;
    m = fmaxf(m, fabsf(v[k]));
  }
  m = cb::warp_reduce<cb::Max>(m);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    if (c < cols) row[c] = v[k] / m;
  }
}

// Rows of up to 128 floats (one float4 a lane): the warp's 4 rows are loaded together, so
// each lane has 4 independent 16-byte loads in flight (one row at a time left too few bytes
// in flight: 147 us at 442368x128 on an H200).
__device__ __forceinline__ void scale_4_short_rows(float* __restrict__ x, long long rows,
                                                   long long cols, long long r0, int lane) {
  float4 v[4];
  float m[4];
  const long long n4 = cols / 4;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const bool in = r0 + k < rows && lane < n4;
    v[k] = in ? reinterpret_cast<const float4*>(x + (r0 + k) * cols)[lane]
              : make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int k = 0; k < 4; ++k)
    m[k] = cb::warp_reduce<cb::Max>(fmaxf(fmaxf(fabsf(v[k].x), fabsf(v[k].y)),
                                  fmaxf(fabsf(v[k].z), fabsf(v[k].w))));
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (r0 + k < rows && lane < n4)
      reinterpret_cast<float4*>(x + (r0 + k) * cols)[lane] =
          make_float4(v[k].x / m[k], v[k].y / m[k], v[k].z / m[k], v[k].w / m[k]);
}

__device__ __forceinline__ void scale_row(float* __restrict__ x, long long cols, long long r,
                                          int lane, bool vec4) {
  float* row = x + r * cols;
  if (vec4) {
    if (cols <= 128) scale_vec4<1>(row, cols, lane);
    else if (cols <= 256) scale_vec4<2>(row, cols, lane);
    else scale_vec4<4>(row, cols, lane);
  } else {
    if (cols <= 128) scale_scalar<4>(row, cols, lane);
    else if (cols <= 256) scale_scalar<8>(row, cols, lane);
    else scale_scalar<16>(row, cols, lane);
  }
}

extern "C" __global__ void __launch_bounds__(128)
reduce_scale_warp(float* __restrict__ x, long long rows, long long cols) {
  const long long r0 = cb::warp_row() * 4;
  if (r0 >= rows) return;
  const int lane = cb::lane_id();
  const bool vec4 = (cols & 3) == 0 && cb::is_aligned16(x);
  if (vec4 && cols <= 128) {
    scale_4_short_rows(x, rows, cols, r0, lane);
    return;
  }
  for (long long r = r0; r < r0 + 4 && r < rows; ++r) scale_row(x, cols, r, lane, vec4);
}
