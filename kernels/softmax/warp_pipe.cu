// cudabench:
//   variant: warp_pipe
//   entry: softmax_warp_pipe
//   block: BLOCK
//   grid: persistent
//   requires: {max_cols: 128}
//   params:
//     BLOCK: [256, 128, 512]
//     ROWS: [4, 2, 8]              # rows a warp holds at once (two groups: one loading)
//     GRID_K: [0, 1, 2, 4]         # blocks per SM (0: as many as are resident)
//     STREAM_LOADS: [0, 1]         # 1: ld.global.nc.L1::no_allocate
//   dtypes: [float32, float16, bfloat16]
//   about: warp_xor's rows held in registers, by persistent warps that load the next group of rows before they reduce and store the current one (kernels/common/rows.cuh), one read and one write
#include "common/rows.cuh"
#include "common/softmax.cuh"

extern "C" __global__ void CB_PIPE_BOUNDS
softmax_warp_pipe(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                  long long rows, long long cols, int chunks) {
  const cb::RowSlots slots{rows, cols, cb::lane_id(),
                           cols % cb::kPack == 0 && cb::is_aligned16(x) && cb::is_aligned16(out)};
  cb::each_row_group(x, slots, -INFINITY, [&](long long r0, cb::Vec<elem_t>(&v)[ROWS]) {
    float m[ROWS], inv[ROWS];
#pragma unroll
    for (int k = 0; k < ROWS; ++k) m[k] = cb::warp_reduce<cb::Max>(cb::hreduce<cb::Max>(v[k]));
#pragma unroll
    for (int k = 0; k < ROWS; ++k) inv[k] = cb::pack_exp_sum(v[k], m[k]);
#pragma unroll
    for (int k = 0; k < ROWS; ++k) inv[k] = 1.0f / cb::warp_reduce<cb::Sum>(inv[k]);
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
      cb::pack_normalize(v[k], m[k], inv[k]);
      slots.store(out, r0 + k, v[k]);
    }
  });
}
