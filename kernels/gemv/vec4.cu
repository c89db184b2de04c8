// cudabench:
//   variant: vec4
//   entry: gemv_vec4
//   block: 256
//   grid: warp_rows
//   about: a warp per row, 16-byte loads of A (streamed, no L1 allocation) and x, 4 in flight, scalar tail; any K
//
// float4 loads need every row to start on a 16-byte boundary: K % 4 == 0 and aligned
// buffers. Otherwise the row is read one float at a time, as in `warp`, so any K works.
#include "common/reduce.cuh"
#include "common/warp.cuh"

extern "C" __global__ void __launch_bounds__(256)
gemv_vec4(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
          long long M, long long K) {
  const long long row = cb::warp_row();
  if (row >= M) return;
  const int lane = cb::lane_id();
  const float* a = A + row * K;
  float acc = 0.0f;
  if ((K & 3) == 0 && cb::is_aligned16(a) && cb::is_aligned16(x)) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const long long n4 = K / 4;
    for (long long j = lane; j < n4; j += 4 * 32) {
      float4 u[4], v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const bool in = j + 32 * k < n4;
        u[k] = in ? cb::load_stream(a4 + j + 32 * k) : make_float4(0.f, 0.f, 0.f, 0.f);
        v[k] = in ? __ldg(x4 + j + 32 * k) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) acc += u[k].x * v[k].x + u[k].y * v[k].y + u[k].z * v[k].z + u[k].w * v[k].w;
    }
  } else {
    for (long long c = lane; c < K; c += 32) acc += a[c] * __ldg(&x[c]);
  }
  acc = cb::warp_reduce<cb::Sum>(acc);
  if (lane == 0) y[row] = acc;
}
