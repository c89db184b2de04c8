// cudabench:
//   variant: warp_xor
//   entry: softmax_warp_xor
//   block: 128
//   grid: warp_rows4
//   requires: {max_cols: 512}
//   about: a warp per 4 rows held in registers (float4 packs when aligned; rows of up to 128 floats loaded together), max and sum by xor shuffles, no shared memory, one read and one write (seed 002)
#include "common/softmax.cuh"

template <int kPerLane>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, float* __restrict__ out,
                                            long long cols, int lane, bool vec4) {
  float v[kPerLane];
  // lane l holds floats 4l..4l+3, 128 + 4l.. (vec4) or l, l + 32, ... (scalar)
#pragma unroll
  for (int p = 0; p < kPerLane / 4; ++p) {
    if (vec4) {
      const long long j = lane + 32LL * p;
      const float4 f = j * 4 < cols ? reinterpret_cast<const float4*>(x)[j]
                                    : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
      v[4 * p] = f.x; v[4 * p + 1] = f.y; v[4 * p + 2] = f.z; v[4 * p + 3] = f.w;
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const long long c = lane + 32LL * (4 * p + q);
        v[4 * p + q] = c < cols ? x[c] : -INFINITY;
      }
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
#pragma unroll
  for (int p = 0; p < kPerLane / 4; ++p) {
    if (vec4) {
      const long long j = lane + 32LL * p;
      if (j * 4 < cols)
        reinterpret_cast<float4*>(out)[j] =
            make_float4(v[4 * p] * inv, v[4 * p + 1] * inv, v[4 * p + 2] * inv, v[4 * p + 3] * inv);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const long long c = lane + 32LL * (4 * p + q);
        if (c < cols) out[c] = v[4 * p + q] * inv;
      }
    }
  }
}

// Rows of up to 128 floats (one float4 a lane): the warp's 4 rows are loaded together, so
// each lane has 4 independent 16-byte loads in flight, as in reduce's short-row mode. Plain
// loads and stores: streaming them (ld.global.nc.L1::no_allocate, __stcs) measured 4% slower
// at 442368x128 on an H200 (116.2 vs 111.8 us, two runs, docs/performance.md).
__device__ __forceinline__ void softmax_4_short_rows(const float* __restrict__ x,
                                                     float* __restrict__ out, long long rows,
                                                     long long cols, long long r0, int lane) {
  float4 v[4];
  const long long n4 = cols / 4;
  const float4 none = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
#pragma unroll
  for (int k = 0; k < 4; ++k)
    v[k] = r0 + k < rows && lane < n4 ? reinterpret_cast<const float4*>(x + (r0 + k) * cols)[lane]
                                      : none;
  float inv[4], m[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) m[k] = cb::warp_reduce<cb::Max>(fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    v[k] = make_float4(__expf(v[k].x - m[k]), __expf(v[k].y - m[k]), __expf(v[k].z - m[k]),
                       __expf(v[k].w - m[k]));
    inv[k] = (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) inv[k] = 1.0f / cb::warp_reduce<cb::Sum>(inv[k]);
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (r0 + k < rows && lane < n4)
      reinterpret_cast<float4*>(out + (r0 + k) * cols)[lane] =
          make_float4(v[k].x * inv[k], v[k].y * inv[k], v[k].z * inv[k], v[k].w * inv[k]);
}

extern "C" __global__ void __launch_bounds__(128)
softmax_warp_xor(const float* __restrict__ x, float* __restrict__ out, float* partials,
                 long long rows, long long cols, int chunks) {
  const long long r0 = cb::warp_row() * 4;
  if (r0 >= rows) return;
  const int lane = cb::lane_id();
  const bool vec4 = (cols & 3) == 0 && cb::is_aligned16(x) && cb::is_aligned16(out);
  if (vec4 && cols <= 128) {
    softmax_4_short_rows(x, out, rows, cols, r0, lane);
    return;
  }
  for (long long r = r0; r < r0 + 4 && r < rows; ++r) {
    const float* row = x + r * cols;
    float* dst = out + r * cols;
    if (cols <= 128) softmax_row<4>(row, dst, cols, lane, vec4);
    else if (cols <= 256) softmax_row<8>(row, dst, cols, lane, vec4);
    else softmax_row<16>(row, dst, cols, lane, vec4);
  }
}
