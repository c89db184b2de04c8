// cudabench:
//   variant: warp_pipe
//   entry: reduce_scale_warp_pipe
//   block: BLOCK
//   grid: persistent
//   requires: {max_cols: 128}
//   params:
//     BLOCK: [256, 128, 512]
//     ROWS: [4, 2, 8]              # rows a warp holds at once (two groups: one loading)
//     GRID_K: [0, 1, 2, 4]         # blocks per SM (0: as many as are resident)
//     STREAM_LOADS: [0, 1]         # 1: ld.global.nc.L1::no_allocate
//   dtypes: [float32, float16, bfloat16]
//   about: warp's rows held in registers, by persistent warps that load the next group of rows before they reduce and store the current one (kernels/common/rows.cuh), one read and one write
#include "common/rows.cuh"

extern "C" __global__ void CB_PIPE_BOUNDS
reduce_scale_warp_pipe(elem_t* x, long long rows, long long cols) {
  const cb::RowSlots slots{rows, cols, cb::lane_id(), cols % cb::kPack == 0 && cb::is_aligned16(x)};
  cb::each_row_group(x, slots, 0.0f, [&](long long r0, cb::Vec<elem_t>(&v)[ROWS]) {
    float m[ROWS];
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
      float a = 0.0f;
#pragma unroll
      for (int e = 0; e < cb::kPack; ++e) a = fmaxf(a, fabsf(v[k].get(e)));
      m[k] = cb::warp_reduce<cb::Max>(a);
    }
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
      const float inv = 1.0f / m[k];  // x * (1 / m), as warp does
#pragma unroll
      for (int e = 0; e < cb::kPack; ++e) v[k].set(e, v[k].get(e) * inv);
      slots.store(x, r0 + k, v[k]);
    }
  });
}
