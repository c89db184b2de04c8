// cudabench:
//   variant: warp
//   entry: reduce_scale_warp
//   block: 128
//   grid: warp_rows
//   requires: {max_cols: 1024}
//   about: a warp per row, the row held in registers (float4 packs when aligned), max by xor shuffles, one read and one write (seed 000 ReduceScaleWarpKernel)
//
// Each lane keeps up to kMaxPacks float4 packs of its row (cols <= 1024); the number of packs
// is a template argument picked per launch, so no registers go to columns a row does not
// have. Rows whose cols % 4 != 0 (or an unaligned buffer) take the float-by-float form.
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
  m = cb::warp_all_max(m);
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
  m = cb::warp_all_max(m);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const long long c = lane + 32LL * k;
    if (c < cols) row[c] = v[k] / m;
  }
}

extern "C" __global__ void __launch_bounds__(128)
reduce_scale_warp(float* __restrict__ x, long long rows, long long cols) {
  const long long r = cb::warp_row();
  if (r >= rows) return;
  float* row = x + r * cols;
  const int lane = cb::lane_id();
  if ((cols & 3) == 0 && cb::is_aligned16(x)) {
    if (cols <= 128) scale_vec4<1>(row, cols, lane);
    else if (cols <= 256) scale_vec4<2>(row, cols, lane);
    else if (cols <= 512) scale_vec4<4>(row, cols, lane);
    else scale_vec4<8>(row, cols, lane);
  } else {
    if (cols <= 128) scale_scalar<4>(row, cols, lane);
    else if (cols <= 256) scale_scalar<8>(row, cols, lane);
    else if (cols <= 512) scale_scalar<16>(row, cols, lane);
    else scale_scalar<32>(row, cols, lane);
  }
}
