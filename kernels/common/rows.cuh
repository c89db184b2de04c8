// Short rows (at most 32 x kPack elements: 128 floats, 256 halves) by persistent warps that
// prefetch: the grid is a wave of blocks (the `persistent` rule), each warp walks groups of
// ROWS rows, and loads the next group before it reduces and stores the one it holds, so the
// loads of one group are in flight during the shuffles, exponentials and stores of the other.
// A warp per group and a grid of all rows (warp_rows4) leaves each warp nothing to load while
// it reduces, and costs a block launch per 16 rows.
//
// Lane l holds a "slot" of kPack elements of each row: the 16-byte pack l when the row is
// whole packs and the buffers aligned, else elements l, l + 32, ... (any cols up to 32 kPack,
// one by one). Elements past the row's end hold `pad`, which the caller picks so they drop
// out (-inf for a max, 0 for a max of |x|). No __restrict__: reduce_scale reads and writes one
// buffer (each row is read before its own warp writes it, and never by another warp).
#pragma once

#include "common/reduce.cuh"  // Vec, load16, store16, warp_reduce, Max, Sum
#include "common/warp.cuh"

#ifndef ROWS
#define ROWS 4
#endif

// 512 threads a SM at least: under __launch_bounds__(BLOCK) alone nvcc 13.0 held the 16-bit
// softmax to 64 registers and spilled; this lets it take 96 (BLOCK 256).
#define CB_PIPE_BOUNDS __launch_bounds__(BLOCK, (512 / BLOCK) > 1 ? (512 / BLOCK) : 1)

namespace cb {

struct RowSlots {
  long long rows, cols;
  int lane;
  bool vec;  // whole 16-byte packs, aligned buffers

  __device__ __forceinline__ bool valid(long long r) const {
    return r < rows && (vec ? lane < cols / kPack : lane < cols);
  }

  __device__ __forceinline__ Vec<elem_t> load(const elem_t* x, long long r,
                                              float pad) const {
    Vec<elem_t> v;
    if (vec) {
      if (r < rows && lane < cols / kPack) {
        const elem_t* p = x + r * cols + lane * kPack;
        return Vec<elem_t>{load16_hinted(p)};  // STREAM_LOADS: dtype.cuh
      }
#pragma unroll
      for (int e = 0; e < kPack; ++e) v.set(e, pad);
      return v;
    }
#pragma unroll
    for (int e = 0; e < kPack; ++e) {
      const long long c = lane + 32LL * e;
      v.set(e, r < rows && c < cols ? to_float(x[r * cols + c]) : pad);
    }
    return v;
  }

  __device__ __forceinline__ void store(elem_t* out, long long r,
                                        const Vec<elem_t>& v) const {
    if (r >= rows) return;
    if (vec) {
      if (lane < cols / kPack) store16(out + r * cols + lane * kPack, v.raw);
      return;
    }
#pragma unroll
    for (int e = 0; e < kPack; ++e) {
      const long long c = lane + 32LL * e;
      if (c < cols) out[r * cols + c] = reinterpret_cast<const elem_t*>(&v.raw)[e];
    }
  }
};

// process(first_row, v) for every group of ROWS rows, v[k] the calling lane's slot of row
// first_row + k; each warp of the grid takes groups warp, warp + warps, ... and holds two.
template <class Process>
__device__ __forceinline__ void each_row_group(const elem_t* x, const RowSlots& s,
                                               float pad, Process process) {
  const long long warps = grid_threads() / 32;
  const long long groups = (s.rows + ROWS - 1) / ROWS;
  long long g = warp_row();
  if (g >= groups) return;
  Vec<elem_t> cur[ROWS];
#pragma unroll
  for (int k = 0; k < ROWS; ++k) cur[k] = s.load(x, g * ROWS + k, pad);
  for (; g < groups; g += warps) {
    Vec<elem_t> next[ROWS];
    const long long n = g + warps;
#pragma unroll
    for (int k = 0; k < ROWS; ++k)
      if (n < groups) next[k] = s.load(x, n * ROWS + k, pad);
    process(g * ROWS, cur);
#pragma unroll
    for (int k = 0; k < ROWS; ++k) cur[k] = next[k];
  }
}

}  // namespace cb
