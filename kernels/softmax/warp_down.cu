// cudabench:
//   variant: warp_down
//   entry: softmax_warp_down
//   block: 128
//   grid: warp_rows
//   requires: {max_cols: 65536}
//   dtypes: [float32, float16, bfloat16]
//   about: a warp per row, three passes over the row in memory, max and sum by __shfl_down_sync, lane 0 broadcasts through shared memory (seed 002)
//
// Seed 002's first row softmax, with its race fixed: lane 0 writes the max and the sum to
// shared memory and the other lanes read them, which needs a __syncwarp in between.
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(128)
softmax_warp_down(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                  long long rows, long long cols, int chunks) {
  __shared__ float row_max[4], row_sum[4];  // one slot per warp of the block
  const long long r = cb::warp_row();
  if (r >= rows) return;
  const int lane = cb::lane_id(), warp = threadIdx.x >> 5;
  const elem_t* row = x + r * cols;
  float m = -INFINITY;
  for (long long c = lane; c < cols; c += 32) m = fmaxf(m, cb::to_float(row[c]));
  for (int offset = 16; offset > 0; offset >>= 1)
    m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, offset));
  if (lane == 0) row_max[warp] = m;
  __syncwarp();
  m = row_max[warp];
  float s = 0.0f;
  for (long long c = lane; c < cols; c += 32) s += __expf(cb::to_float(row[c]) - m);
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (lane == 0) row_sum[warp] = s;
  __syncwarp();
  const float inv = 1.0f / row_sum[warp];
  for (long long c = lane; c < cols; c += 32)
    out[r * cols + c] = cb::from_float<elem_t>(__expf(cb::to_float(row[c]) - m) * inv);
}
