// cudabench:
//   variant: smem
//   entry: transpose_smem
//   block: 256
//   grid: tile32
//   dtypes: [float32, float16, bfloat16]
//   about: 32 x 33 shared-memory tile, +1 padding so the column reads hit 32 different banks, coalesced both ways (seed 002)
#include "common/tile.cuh"

extern "C" __global__ void __launch_bounds__(256)
transpose_smem(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  __shared__ float tile[cb::kTile][cb::kTile + 1];
  const cb::Tile t = cb::input_tile();
  int col = t.col0 + threadIdx.x;
  for (int k = 0; k < cb::kTile; k += cb::kTileRows) {
    const int row = t.row0 + threadIdx.y + k;
    if (row < M && col < N) tile[threadIdx.y + k][threadIdx.x] = cb::to_float(in[(long long)row * N + col]);
  }
  __syncthreads();
  const int out_col = t.row0 + threadIdx.x;  // out is N x M
  for (int k = 0; k < cb::kTile; k += cb::kTileRows) {
    const int out_row = t.col0 + threadIdx.y + k;
    if (out_row < N && out_col < M)
      out[(long long)out_row * M + out_col] = cb::from_float<elem_t>(tile[threadIdx.x][threadIdx.y + k]);
  }
}
