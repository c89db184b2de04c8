// cudabench:
//   variant: vec
//   entry: transpose_vec
//   block: BLOCK
//   grid: tile64
//   params:                  # the tile is 64 x 64 elements; the block 32 x BLOCK/32 threads
//     BLOCK: [512, 256, 128]
//     GROUP: [8, 0, 4, 16, 32]  # blocks walk strips GROUP tiles wide, top to bottom (0: rows of tiles)
//   dtypes: [float32, float16, bfloat16]
//   about: smem64's 64 x 64 tile moved in 16-byte loads and stores (a thread reads 16 bytes of an input row, and writes 16 bytes of an output row gathered from kPack input rows), as the card's copy ceiling moves its bytes
//
// smem64 moves 4 bytes an instruction: under ncu on an H200 it ran DRAM at 79.5% of the peak, 92%
// of what a copy reaches (docs/performance.md), and the elementwise ops show the same gap (add
// naive 923 us, 4-byte accesses, against float4's 736 at 2^28). Here a thread loads whole 16-byte
// packs of an input row (64 / kPack threads cover a row of the tile) into a 64 x 65 float tile,
// and after the barrier gathers kPack consecutive input rows of one column, which are kPack
// consecutive elements of an output row, into one 16-byte store. Row stride 65: a warp's shared
// accesses, both ways, meet at most two to a bank. Shapes whose rows are not whole packs
// (M or N not a multiple of kPack) or unaligned buffers go element by element through the same
// tile. On an H200 (docs/performance.md), 8192x8192: float32 132.4 us against smem64's 136.9,
// bfloat16 70.5 against 83.0; GROUP 8 gave 2-4% of that (the ~500 resident blocks of 512
// threads then read 2 KiB runs of an input row and write ~16 KiB runs of an output row, where
// rows of tiles wrote 1 KiB runs).
#include "common/dtype.cuh"
#include "common/warp.cuh"  // is_aligned16

#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef GROUP
#define GROUP 8
#endif

using cb::kPack;
constexpr int kT = 64;                  // the tile's side, in elements
constexpr int kVecs = kT / kPack;       // 16-byte packs in a row of the tile
constexpr int kRows = BLOCK / kVecs;    // tile rows one pass of the block covers
static_assert(BLOCK % kVecs == 0 && kT % kRows == 0, "BLOCK: whole passes over the tile");

extern "C" __global__ void __launch_bounds__(BLOCK)
transpose_vec(const elem_t* __restrict__ in, elem_t* __restrict__ out, int M, int N) {
  __shared__ float tile[kT][kT + 1];
  // The tile this block moves. GROUP 0: block (x, y) takes tile (x, y), so the blocks resident
  // at once cover a few whole rows of tiles: long runs of input rows, short runs (a tile's
  // 64 elements a row of tiles) of output rows. GROUP g: blocks walk strips g tiles wide from
  // top to bottom, so those resident cover a squarer patch: shorter input runs, longer output.
  int tx = blockIdx.x, ty = blockIdx.y;
  if (GROUP > 0) {
    const int b = blockIdx.y * gridDim.x + blockIdx.x, strip = GROUP * gridDim.y;
    const int first = b / strip * GROUP, width = min(GROUP, (int)gridDim.x - first);
    tx = first + b % strip % width;
    ty = b % strip / width;
  }
  const int col0 = tx * kT, row0 = ty * kT;  // the tile in `in` (M x N)
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  const int v = t % kVecs, r = t / kVecs;  // this thread's pack in a row, and first row
  const bool packs = N % kPack == 0 && M % kPack == 0 && cb::is_aligned16(in) && cb::is_aligned16(out);
  if (packs) {
    cb::Vec<elem_t> p[kT / kRows];
#pragma unroll
    for (int k = 0; k < kT / kRows; ++k) {  // all loads first: kT / kRows in flight
      const int row = row0 + r + k * kRows, col = col0 + v * kPack;
      if (row < M && col < N) p[k].raw = cb::load16(in + (long long)row * N + col);
    }
#pragma unroll
    for (int k = 0; k < kT / kRows; ++k) {
#pragma unroll
      for (int e = 0; e < kPack; ++e) tile[r + k * kRows][v * kPack + e] = p[k].get(e);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kT / kRows; ++k) {
      const int row = row0 + r + k * kRows;
#pragma unroll
      for (int e = 0; e < kPack; ++e) {
        const int col = col0 + v * kPack + e;
        if (row < M && col < N) tile[r + k * kRows][v * kPack + e] = cb::to_float(in[(long long)row * N + col]);
      }
    }
  }
  __syncthreads();
  // output row o (input column col0 + o), elements row0 + v x kPack ... + kPack - 1
#pragma unroll
  for (int k = 0; k < kT / kRows; ++k) {
    const int o = r + k * kRows, out_row = col0 + o, out_col = row0 + v * kPack;
    if (out_row >= N) continue;
    if (packs) {
      if (out_col < M) {
        cb::Vec<elem_t> p;
#pragma unroll
        for (int e = 0; e < kPack; ++e) p.set(e, tile[v * kPack + e][o]);
        cb::store16(out + (long long)out_row * M + out_col, p.raw);
      }
    } else {
#pragma unroll
      for (int e = 0; e < kPack; ++e)
        if (out_col + e < M) out[(long long)out_row * M + out_col + e] = cb::from_float<elem_t>(tile[v * kPack + e][o]);
    }
  }
}
