// cudabench:
//   variant: online_tile
//   launches:
//     - {entry: softmax_1d_tile_stats, block: 256, grid: split}
//     - {entry: softmax_1d_tile_norm, block: 256, grid: tiles}
//   params:
//     STATS_UNROLL: [8, 4, 16]   # the stats kernel's 16-byte loads in flight a thread
//     UNROLL: [1, 2, 4, 8]       # the normalize kernel's: a block per 256 x UNROLL packs
//     NORM_HINTS: [0, 1]         # 1: its loads and stores marked evict-first (ld/st.global.cs)
//   requires: {max_rows: 1}
//   dtypes: [float32, float16, bfloat16]
//   about: online_vec's stats pass, whose last block leaves (max, 1/sum) for all, then a normalize pass in the layout that moves read + write traffic fastest (a large grid of short blocks, as the copy ceiling's kernel), from the end of the row
//
// online_vec's normalize kernel is a persistent grid-stride loop: under ncu on an H200 it moves
// its 2.1 GB at 82.8% of the DRAM peak, where the card's copy ceiling (stream_copy tile, a block
// per BLOCK x UNROLL packs, no loop) is 87.8%. That layout has ~10^5 blocks, too many for each
// to combine the stats kernel's block pairs, so the last stats block to finish (a ticket, as
// reduce's split rows) combines them once and leaves (max, 1 / sum) after them in `partials`.
// Every normalize thread then reads that one pair through the read-only path (__ldg, cached in
// L1: written by the previous kernel, never while this one runs). An earlier try read it with
// __ldcg, past L1: 2^26 threads asking one L2 line, a hot spot that made the pass slower than
// online_vec's (975 against 813 us, commit 26b6cfd). On an H200 at 2^28 floats (2026-11-24,
// docs/performance.md): UNROLL 1, one pack a thread as the copy ceiling's kernel, 755-759 us
// against 770-776 at UNROLL 2-8; NORM_HINTS 1 (evict-first loads and stores, to keep the tail
// the stats pass left in L2) cost 11-33 us, so it stays 0.
#include "common/softmax.cuh"
#include "common/stream.cuh"  // tile_vector: the `tiles` layout, UNROLL packs a thread

using cb::kPack;

#ifndef STATS_UNROLL
#define STATS_UNROLL 8
#endif

#ifndef NORM_HINTS
#define NORM_HINTS 0
#endif

#define STATS_BOUNDS __launch_bounds__(256, 2)  // as online_vec: no spill in the batch loop

extern "C" __global__ void STATS_BOUNDS
softmax_1d_tile_stats(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                      long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  __shared__ bool is_last;
  cb::MaxSum acc = cb::block_combine(cb::stream_max_sum<STATS_UNROLL>(x, out, cols), scratch);
  // after the pairs: (max, 1 / sum) at 2 chunks, the ticket at 2 chunks + 2 (zero between launches)
  unsigned* ticket = reinterpret_cast<unsigned*>(partials + 2 * chunks + 2);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = acc.max;
    partials[2 * blockIdx.x + 1] = acc.sum;
    is_last = cb::take_last_ticket(ticket, chunks);
  }
  __syncthreads();
  if (!is_last) return;
  acc = cb::combine_partials(partials, chunks, scratch);
  if (threadIdx.x == 0) {
    partials[2 * chunks] = acc.max;
    partials[2 * chunks + 1] = 1.0f / acc.sum;
    *ticket = 0;
  }
}

// Thread t of block b normalizes packs b x 256 x UNROLL + t + u x 256 (u < UNROLL) counted from
// the end of the row: the stats pass read it front to back, so its last ~L2-size bytes are the
// likeliest still cached. Unaligned buffers and the last cols % kPack elements one by one.
extern "C" __global__ void __launch_bounds__(256)
softmax_1d_tile_norm(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     long long rows, long long cols, int chunks) {
  const float m = __ldg(&partials[2 * chunks]), inv = __ldg(&partials[2 * chunks + 1]);
  long long done = 0;
  if (cb::is_aligned16(x) && cb::is_aligned16(out)) {
    const long long vectors = cols / kPack;
    cb::Vec<elem_t> p[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) {
        const elem_t* src = x + (vectors - 1 - v) * kPack;
        p[u].raw = NORM_HINTS ? __ldcs(reinterpret_cast<const uint4*>(src)) : cb::load16(src);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) {
        cb::pack_normalize(p[u], m, inv);
        if (NORM_HINTS) cb::store16_stream(out + (vectors - 1 - v) * kPack, p[u].raw);
        else cb::store16(out + (vectors - 1 - v) * kPack, p[u].raw);
      }
    }
    done = vectors * kPack;
  }
  cb::each_element(done, cols, [&](long long i) {
    out[i] = cb::from_float<elem_t>(__expf(cb::to_float(x[i]) - m) * inv);
  });
}
