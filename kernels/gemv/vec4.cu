// cudabench:
//   variant: vec4
//   entry: gemv_vec4
//   block: BLOCK
//   grid: warp_rows
//   params:
//     BLOCK: [256, 128, 512, 1024]   # threads a block (its warps take rows)
//     LOADS: [2, 4, 8]               # 16-byte loads of A (and of x) in flight a lane (2: H200, docs/performance.md)
//   dtypes: [float32, float16, bfloat16]
//   about: a warp per row, 16-byte loads of A (streamed, no L1 allocation) and x, LOADS in flight, scalar tail; any K
//
// 16-byte loads (4 floats or 8 halves) need every row to start on a 16-byte boundary:
// K % kPack == 0 and aligned buffers. Otherwise the row is read one element at a time, as in
// `warp`, so any K works. Products are summed in float.
#include "common/reduce.cuh"
#include "common/warp.cuh"  // LOADS: reduce.cuh's default (4) unless the configuration sets it

extern "C" __global__ void __launch_bounds__(BLOCK)
gemv_vec4(const elem_t* __restrict__ A, const elem_t* __restrict__ x, elem_t* __restrict__ y,
          long long M, long long K) {
  using cb::kPack;
  const long long row = cb::warp_row();
  if (row >= M) return;
  const int lane = cb::lane_id();
  const elem_t* a = A + row * K;
  float acc = 0.0f;
  if (K % kPack == 0 && cb::is_aligned16(a) && cb::is_aligned16(x)) {
    const long long nv = K / kPack;
    for (long long j = lane; j < nv; j += LOADS * 32) {
      cb::Vec<elem_t> u[LOADS], v[LOADS];
#pragma unroll
      for (int k = 0; k < LOADS; ++k) {
        const bool in = j + 32 * k < nv;
        u[k].raw = in ? cb::load16_stream(a + (j + 32 * k) * kPack) : make_uint4(0, 0, 0, 0);
        v[k].raw = in ? __ldg(reinterpret_cast<const uint4*>(x) + j + 32 * k) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < LOADS; ++k)
#pragma unroll
        for (int e = 0; e < kPack; ++e) acc += u[k].get(e) * v[k].get(e);
    }
  } else {
    for (long long c = lane; c < K; c += 32) acc += cb::to_float(a[c]) * cb::to_float(__ldg(&x[c]));
  }
  acc = cb::warp_reduce<cb::Sum>(acc);
  if (lane == 0) y[row] = cb::from_float<elem_t>(acc);
}
