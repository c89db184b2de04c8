// cudabench:
//   variant: ldg
//   entry: transpose_ldg
//   block: 256
//   grid: tile32
//   dtypes: [float32, float16, bfloat16]
//   about: coalesced writes, strided reads through the read-only cache (__ldg) (seed 002)
//
// Threads walk the output tile's rows: a warp writes 32 consecutive floats of out and reads
// a column of in, whose other elements the neighbouring warps' __ldg reads hit in cache.
#include "common/tile.cuh"

extern "C" __global__ void __launch_bounds__(256)
transpose_ldg(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  const cb::Tile t = cb::input_tile();
  const int row = t.row0 + threadIdx.x;  // out's column = in's row
  for (int k = 0; k < cb::kTile; k += cb::kTileRows) {
    const int col = t.col0 + threadIdx.y + k;  // out's row = in's column
    if (row < M && col < N) out[(long long)col * M + row] = __ldg(&in[(long long)row * N + col]);
  }
}
