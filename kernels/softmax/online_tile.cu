// cudabench:
//   variant: online_tile
//   launches:
//     - {entry: softmax_1d_tile_stats, block: 256, grid: split}
//     - {entry: softmax_1d_tile_norm, block: 256, grid: packs}
//   params:
//     UNROLL: [8, 4, 2]      # the stats kernel's 16-byte loads in flight a thread
//   requires: {max_rows: 1}
//   dtypes: [float32, float16, bfloat16]
//   about: online_vec's stats pass, whose last block combines the block pairs into (max, 1/sum), then a normalize pass in the layout that moves read + write traffic fastest on an H200 - a thread per 16-byte pack, plain loads and stores, no loop
//
// online_vec's second kernel is a persistent grid-stride copy with a scale: on an H200 such a
// copy runs 8% under cudaMemcpy, a grid of a thread per 16 bytes (add's float4) at torch's and
// cudaMemcpy's rate. That grid has ~10^5 blocks, too many to each combine the stats kernel's
// block pairs, so the last stats block to finish (a ticket, as in reduce's split rows) combines
// them once and leaves (max, 1 / sum) after them in `partials`.
#include "common/softmax.cuh"

using cb::kPack;

#define STATS_BOUNDS __launch_bounds__(256, 2)  // as online_vec: no spill in the batch loop

extern "C" __global__ void STATS_BOUNDS
softmax_1d_tile_stats(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                      long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  __shared__ bool is_last;
  cb::MaxSum acc = cb::block_combine(cb::stream_max_sum(x, out, cols), scratch);
  unsigned* ticket = reinterpret_cast<unsigned*>(partials + 2 * chunks + 2);  // zero between launches
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = acc.max;
    partials[2 * blockIdx.x + 1] = acc.sum;
    is_last = cb::take_last_ticket(ticket, chunks);
  }
  __syncthreads();
  if (!is_last) return;
  acc = cb::empty_max_sum();
  for (int i = threadIdx.x; i < chunks; i += blockDim.x)
    acc = cb::combine(acc, cb::MaxSum{__ldcg(&partials[2 * i]), __ldcg(&partials[2 * i + 1])});
  acc = cb::block_combine(acc, scratch);
  if (threadIdx.x == 0) {
    partials[2 * chunks] = acc.max;
    partials[2 * chunks + 1] = 1.0f / acc.sum;
    *ticket = 0;
  }
}

// A thread per 16-byte pack, counted from the end of the row (the stats pass read it front to
// back: its last ~L2-size bytes are the likeliest still cached); unaligned buffers and the
// last cols % kPack elements one by one.
extern "C" __global__ void __launch_bounds__(256)
softmax_1d_tile_norm(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     long long rows, long long cols, int chunks) {
  const float m = __ldcg(&partials[2 * chunks]), inv = __ldcg(&partials[2 * chunks + 1]);
  const long long vectors = cb::is_aligned16(x) && cb::is_aligned16(out) ? cols / kPack : 0;
  const long long t = cb::thread_index();
  if (t < vectors) {
    const long long v = vectors - 1 - t;
    cb::Vec<elem_t> p;
    p.raw = cb::load16(x + v * kPack);
    cb::pack_normalize(p, m, inv);
    cb::store16(out + v * kPack, p.raw);
  }
  for (long long i = vectors * kPack + t; i < cols; i += cb::grid_threads())
    out[i] = cb::from_float<elem_t>(__expf(cb::to_float(x[i]) - m) * inv);
}
