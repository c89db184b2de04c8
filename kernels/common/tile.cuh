// The 32 x 32 tile of the transpose grid rule `tile32` (cudabench/ops/transpose.py): a block
// of 32 x 8 threads, each thread 4 rows of the tile, 8 apart.
//
// The transposes copy elem_t (common/dtype.cuh); the shared-memory tiles hold floats, exact
// for every dtype, so the +1 padding keeps the column reads on 32 different 4-byte banks.
#pragma once

#include "common/dtype.cuh"

namespace cb {

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // blockDim.y

struct Tile {
  int col0, row0;  // the tile's first column and row in the input (M x N)
};

__device__ __forceinline__ Tile input_tile() { return {(int)blockIdx.x * kTile, (int)blockIdx.y * kTile}; }

}  // namespace cb
