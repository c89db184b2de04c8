// cudabench:
//   variant: pack16
//   entry: transpose_pack16
//   block: BLOCK
//   grid: tile64
//   params:                 # the tile is TILE x TILE elements; the block 32 x BLOCK/32 threads
//     TILE: [128, 64]
//     BLOCK: [256, 128, 64, 32]
//     GROUP: [0, 8, 16]     # blocks walk strips GROUP tiles wide, top to bottom (0: rows of tiles)
//   constraints: ["(TILE // 8) ** 2 % BLOCK == 0", "(TILE // 8) ** 2 // BLOCK <= 2"]   # 1 or 2 blocks of 8 x 8 a thread
//   dtypes: [bfloat16, float16]
//   about: 16-bit transpose in 16-byte loads and stores on both sides, as a copy moves its bytes - each thread loads an 8 x 8 block (8 rows of 16 bytes), transposes it in registers (32 byte permutes, prmt), and writes its 8 output rows into a 16-bit shared tile swizzled so that both the writes and the 16-byte reads that feed the stores are free of bank conflicts
//
// Why (docs/performance/transpose.md): vec, the best before in 16 bits (80% of the H100's DRAM
// peak at 8192x8192 bfloat16, a copy of the same bytes 87%), keeps smem64's tile of floats:
// a thread loads one 16-byte pack (8 elements), stores them to shared memory as 8 floats,
// and gathers 8 floats back for each 16-byte store, 16 shared accesses a pack, with one
// 16-byte load in flight per thread. Here the transpose of 2-byte elements happens in
// registers: a word holds two elements, so each word of an output row of the 8 x 8 block is
// one byte permute of two input words (__byte_perm: the low halves of rows 2k and 2k + 1, or
// their high halves). A thread then has 8 loads in flight (128 bytes), makes one 16-byte
// shared store per output row of its block and one 16-byte shared load per output store.
//
// Shared tile: TILE output rows (input columns) of TILE / 8 units of 16 bytes; unit u of
// output row o (input rows 8u .. 8u + 7 of that column) sits at slot u ^ ((o / 8) % 8). A
// warp's 16-byte accesses go 8 lanes at a time (128 bytes): the writes of 8 lanes are one
// output row offset in 8 blocks of consecutive columns (o / 8 differs, u the same), the
// reads 8 consecutive units of one output row (u differs, o the same); the xor spreads
// either over the 8 different 16-byte bank groups. Global accesses: a row of a tile is
// TILE / 8 lanes of consecutive 16-byte packs (128 or 256 contiguous bytes) on both sides.
//
// Shapes whose rows are not whole 16-byte packs (M or N not a multiple of 8) or buffers not
// 16-byte aligned go element by element through the same shared memory (2-byte accesses).
#include <cstdint>

#include "common/dtype.cuh"

#ifndef TILE
#define TILE 128
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef GROUP
#define GROUP 0
#endif

static_assert(sizeof(elem_t) == 2, "pack16 is for float16 and bfloat16");

// Launch bounds: sm_90's ptxas, given the block size alone, holds a thread in 60 registers at
// the defaults, TILE 128 x BLOCK 256 (52 at TILE 64 x BLOCK 64), without spilling: 4 blocks an
// SM (ncu on an H100: 50% theoretical occupancy), 128 KiB of loads in flight. sm_80's chose
// 56 at TILE 64 x BLOCK 64 and spilled, so there the bounds ask for 512 threads an SM (up to
// 128 registers).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PACK16_BOUNDS __launch_bounds__(BLOCK, (512 / BLOCK > 1 ? 512 / BLOCK : 1))
#else
#define PACK16_BOUNDS __launch_bounds__(BLOCK)
#endif

namespace {

constexpr int kT = TILE;
constexpr int kB = kT / 8;                 // 8 x 8 blocks along a side of the tile
constexpr int kPer = kB * kB / BLOCK;      // 8 x 8 blocks a thread
constexpr int kUnits = kT * kB / BLOCK;    // 16-byte output units a thread stores
static_assert(kT % 8 == 0 && kPer >= 1 && kPer * BLOCK == kB * kB, "TILE, BLOCK: whole 8 x 8 blocks a thread");
static_assert(kUnits * BLOCK == kT * kB, "whole units a thread");

struct At {
  int row0, col0;  // the tile's first row and column in `in` (M x N)
};

// The tile block (bx, by) of a (gx, gy) grid moves. GROUP 0: tile (bx, by). GROUP g: blocks
// walk strips g tiles wide from top to bottom (as transpose vec), so the blocks resident at
// once cover a squarer patch: longer runs of each output row.
__host__ __device__ inline At tile_at(int bx, int by, int gx, int gy) {
  unsigned tx = bx, ty = by;
  if constexpr (GROUP > 0) {  // unsigned: signed division here spilled on sm_80
    const unsigned b = (unsigned)by * gx + bx, strip = (unsigned)GROUP * gy;
    const unsigned first = b / strip * GROUP, left = gx - first;
    const unsigned width = GROUP < left ? GROUP : left;
    tx = first + b % strip % width;
    ty = b % strip / width;
  }
  return {(int)ty * kT, (int)tx * kT};
}

// __byte_perm(a, b, sel): byte n of the result is byte (sel >> 4n) & 7 of b:a (a bytes 0-3).
__host__ __device__ inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
#ifdef __CUDA_ARCH__
  return __byte_perm(a, b, sel);
#else
  const uint64_t ab = (uint64_t)b << 32 | a;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n) r |= (uint32_t)((ab >> (8 * ((sel >> (4 * n)) & 7))) & 0xff) << (8 * n);
  return r;
#endif
}

using cb::word;

// Slot of unit u (input rows 8u .. 8u + 7) of output row o in the shared tile.
__host__ __device__ inline int slot(int o, int u) { return o * kB + (u ^ ((o >> 3) & 7)); }

// Whole 16-byte packs: each 8 x 8 block b = t + BLOCK k (block row b / kB, block column
// b % kB of the tile) loaded as 8 packs of 8 rows, all loads first; then transposed: output
// row j of the block (input column 8 cb + j), word q = elements of input rows 2q, 2q + 1.
__host__ __device__ inline void load_packs(int t, At at, const elem_t* __restrict__ in, int M, int N,
                                           uint4* tile) {
  uint4 v[kPer][8];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int b = t + BLOCK * k, rb = b / kB, cb = b % kB;
    const int col = at.col0 + 8 * cb;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int row = at.row0 + 8 * rb + i;
      v[k][i] = row < M && col < N ? *reinterpret_cast<const uint4*>(in + (long long)row * N + col)
                                   : make_uint4(0, 0, 0, 0);
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const int b = t + BLOCK * k, rb = b / kB, cb = b % kB;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;  // high halves : low halves
      uint4 o;
      o.x = prmt(word(v[k][0], j >> 1), word(v[k][1], j >> 1), sel);
      o.y = prmt(word(v[k][2], j >> 1), word(v[k][3], j >> 1), sel);
      o.z = prmt(word(v[k][4], j >> 1), word(v[k][5], j >> 1), sel);
      o.w = prmt(word(v[k][6], j >> 1), word(v[k][7], j >> 1), sel);
      tile[slot(8 * cb + j, rb)] = o;
    }
  }
}

// Unit q = t + BLOCK s of the tile's output: output row o = q / kB (out row col0 + o),
// elements row0 + 8u .. + 7 (u = q % kB).
__host__ __device__ inline void store_packs(int t, At at, elem_t* __restrict__ out, int M, int N,
                                            const uint4* tile) {
#pragma unroll
  for (int s = 0; s < kUnits; ++s) {
    const int q = t + BLOCK * s, o = q / kB, u = q % kB;
    const int out_row = at.col0 + o, out_col = at.row0 + 8 * u;
    if (out_row < N && out_col < M)
      *reinterpret_cast<uint4*>(out + (long long)out_row * M + out_col) = tile[slot(o, u)];
  }
}

// Any shape and alignment: element by element, the tile as kT x kT elements.
__host__ __device__ inline void load_elements(int t, At at, const elem_t* __restrict__ in, int M,
                                              int N, elem_t* tile) {
#pragma unroll 1
  for (int i = t; i < kT * kT; i += BLOCK) {
    const int r = i / kT, c = i % kT, row = at.row0 + r, col = at.col0 + c;
    if (row < M && col < N) tile[i] = in[(long long)row * N + col];
  }
}
__host__ __device__ inline void store_elements(int t, At at, elem_t* __restrict__ out, int M, int N,
                                               const elem_t* tile) {
#pragma unroll 1
  for (int i = t; i < kT * kT; i += BLOCK) {
    const int o = i / kT, q = i % kT, out_row = at.col0 + o, out_col = at.row0 + q;
    if (out_row < N && out_col < M) out[(long long)out_row * M + out_col] = tile[q * kT + o];
  }
}

__host__ __device__ inline bool whole_packs(const void* in, const void* out, int M, int N) {
  return M % 8 == 0 && N % 8 == 0 && (reinterpret_cast<std::uintptr_t>(in) & 15) == 0 &&
         (reinterpret_cast<std::uintptr_t>(out) & 15) == 0;
}

}  // namespace

extern "C" __global__ void PACK16_BOUNDS
transpose_pack16(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  __shared__ uint4 tile[kT * kB];  // kT x kT elements (8 or 32 KiB)
  const At at = tile_at(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y);
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (whole_packs(in, out, M, N)) {
    load_packs(t, at, in, M, N, tile);
    __syncthreads();
    store_packs(t, at, out, M, N, tile);
  } else {
    load_elements(t, at, in, M, N, reinterpret_cast<elem_t*>(tile));
    __syncthreads();
    store_elements(t, at, out, M, N, reinterpret_cast<const elem_t*>(tile));
  }
}
