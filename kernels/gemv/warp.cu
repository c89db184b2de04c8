// cudabench:
//   variant: warp
//   entry: gemv_warp
//   block: BLOCK
//   grid: warp_rows
//   params: {BLOCK: [256, 128, 512, 1024]}   # threads a block (its warps take rows)
//   dtypes: [float32, float16, bfloat16]
//   about: a warp per row, lane l reads columns l, l+32, ..., warp sum by xor shuffles (seed 002 sgemv)
#include "common/reduce.cuh"
#include "common/warp.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
gemv_warp(const elem_t* __restrict__ A, const elem_t* __restrict__ x, elem_t* __restrict__ y,
          long long M, long long K) {
  const long long row = cb::warp_row();
  if (row >= M) return;
  const elem_t* a = A + row * K;
  float acc = 0.0f;
  for (long long c = cb::lane_id(); c < K; c += 32)
    acc += cb::to_float(a[c]) * cb::to_float(__ldg(&x[c]));
  acc = cb::warp_reduce<cb::Sum>(acc);
  if (cb::lane_id() == 0) y[row] = cb::from_float<elem_t>(acc);
}
