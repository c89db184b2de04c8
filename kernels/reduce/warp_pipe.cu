// cudabench:
//   variant: warp_pipe
//   entry: reduce_sum_warp_pipe
//   block: BLOCK
//   grid: persistent
//   requires: {max_cols: 128}
//   params:
//     BLOCK: [256, 128, 512]
//     ROWS: [4, 2, 8]              # rows a warp holds at once (two groups: one loading)
//     STREAM_LOADS: [1, 0]         # 1: ld.global.nc.L1::no_allocate
//   dtypes: [float32, float16, bfloat16]
//   about: short rows by persistent warps (a wave of blocks) that load the next group of rows before they reduce the current one (kernels/common/rows.cuh); a 16-byte pack a lane, warp shuffles
#include "common/rows.cuh"

extern "C" __global__ void CB_PIPE_BOUNDS
reduce_sum_warp_pipe(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     unsigned* counters, long long rows, long long cols, int group, int chunks) {
  const cb::RowSlots slots{rows, cols, cb::lane_id(), cols % cb::kPack == 0 && cb::is_aligned16(x)};
  cb::each_row_group(x, slots, 0.0f, [&](long long r0, cb::Vec<elem_t>(&v)[ROWS]) {
    float s[ROWS];
#pragma unroll
    for (int k = 0; k < ROWS; ++k) s[k] = cb::warp_reduce<cb::Sum>(cb::hreduce<cb::Sum>(v[k]));
#pragma unroll
    for (int k = 0; k < ROWS; ++k)
      if (slots.lane == k && r0 + k < rows) out[r0 + k] = cb::from_float<elem_t>(s[k]);
  });
}
