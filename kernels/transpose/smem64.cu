// cudabench:
//   variant: smem64
//   entry: transpose_smem64
//   block: BLOCK
//   grid: tile64
//   params:                  # ops/transpose.py's tile64 rule reads TILE; the block is 32 x BLOCK/32
//     TILE: [64, 32]         # the tile's side (64: 64 x 65 floats of shared memory)
//     BLOCK: [256, 128, 512, 1024]
//   constraints: ["TILE % (BLOCK // 32) == 0"]   # whole passes of BLOCK/32 rows over the tile
//   dtypes: [float32, float16, bfloat16]
//   about: 64 x 65 shared-memory tile, 16 elements a thread (twice the columns and rows of smem), more bytes in flight per block
//
// The smem variant's 32 x 32 tile gives each thread 4 loads before the barrier; at 8192x8192
// it ran DRAM at 72% of its peak (docs/performance.md). Here (at the defaults, TILE 64 and
// 32 x 8 threads) each thread moves 8 rows x 2 columns, 16 independent loads, then 16 stores.
#include "common/dtype.cuh"

#ifndef TILE
#define TILE 64
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
constexpr int kT = TILE, kRows = BLOCK / 32, kHalves = TILE / 32;
static_assert(TILE % 32 == 0 && TILE % kRows == 0, "TILE: a multiple of 32 and of BLOCK / 32");

extern "C" __global__ void __launch_bounds__(BLOCK)
transpose_smem64(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  __shared__ float tile[kT][kT + 1];
  const int col0 = blockIdx.x * kT, row0 = blockIdx.y * kT;
#pragma unroll
  for (int k = 0; k < kT; k += kRows) {
    const int row = row0 + threadIdx.y + k;
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      const int col = col0 + threadIdx.x + 32 * h;
      if (row < M && col < N) tile[threadIdx.y + k][threadIdx.x + 32 * h] = cb::to_float(in[(long long)row * N + col]);
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kT; k += kRows) {
    const int out_row = col0 + threadIdx.y + k;  // out is N x M
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      const int out_col = row0 + threadIdx.x + 32 * h;
      if (out_row < N && out_col < M)
        out[(long long)out_row * M + out_col] = cb::from_float<elem_t>(tile[threadIdx.x + 32 * h][threadIdx.y + k]);
    }
  }
}
