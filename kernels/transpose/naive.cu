// cudabench:
//   variant: naive
//   entry: transpose_naive
//   block: 256
//   grid: tile32
//   dtypes: [float32, float16, bfloat16]
//   about: coalesced reads, strided writes, one element at a time (seed 002 native)
#include "common/tile.cuh"

extern "C" __global__ void __launch_bounds__(256)
transpose_naive(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  const cb::Tile t = cb::input_tile();
  const int col = t.col0 + threadIdx.x;
  for (int k = 0; k < cb::kTile; k += cb::kTileRows) {
    const int row = t.row0 + threadIdx.y + k;
    if (row < M && col < N) out[(long long)col * M + row] = in[(long long)row * N + col];
  }
}
