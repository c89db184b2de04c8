// cudabench:
//   variant: online_vec
//   launches:
//     - {entry: softmax_1d_vec_stats, block: 256, grid: split}
//     - {entry: softmax_1d_vec_norm, block: 256, grid: split}
//   params:
//     UNROLL: [8, 4, 2]         # the stats kernel's 16-byte loads in flight a thread
//     NORM_UNROLL: [4, 8, 2, 1] # the normalize kernel's
//     STREAM_LOADS: [0, 1]      # the normalize kernel's loads: 0 plain; 1 nc, no L1 allocation
//   requires: {max_rows: 1}
//   dtypes: [float32, float16, bfloat16]
//   about: online with the bytes in flight of a streaming copy - UNROLL 16-byte loads a thread, one max and one rescale per batch of them (not per element), and the normalize pass runs from the end, where the first pass left the array in L2
//
// What limits `online` is not its traffic (two reads and a write, as here) but a load of 4 bytes
// at a time and a compare-and-rescale per element. Here each thread loads UNROLL packs, takes
// their max, sums exp(x - max) over them and folds the pair into its running (max, sum) once;
// the second kernel streams NORM_UNROLL 16-byte loads a thread (plain: on an H200 the nc form
// was 1.5-2% slower in this read + write pass) and evict-first stores. The first pass reads the
// array front to back, so its last ~L2-size bytes are still cached when the second, reading
// back to front, starts.
#include "common/softmax.cuh"

using cb::kPack;

#ifndef NORM_UNROLL
#define NORM_UNROLL 4
#endif

// (256, 2): under __launch_bounds__(256) alone nvcc 13.0 gave the stats kernel 32 registers and
// a spill in its loop; asking for 2 blocks a SM (128 registers at most) it spills nothing, in
// 16-bit at UNROLL 8 either.
#define VEC_BOUNDS __launch_bounds__(256, 2)

extern "C" __global__ void VEC_BOUNDS
softmax_1d_vec_stats(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  const cb::MaxSum acc = cb::block_combine(cb::stream_max_sum(x, out, cols), scratch);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = acc.max;
    partials[2 * blockIdx.x + 1] = acc.sum;
  }
}

extern "C" __global__ void VEC_BOUNDS
softmax_1d_vec_norm(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                    long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  const cb::MaxSum acc = cb::combine_partials(partials, chunks, scratch);
  const float m = acc.max, inv = 1.0f / acc.sum;
  const long long vectors = cb::is_aligned16(x) && cb::is_aligned16(out) ? cols / kPack : 0;
  const long long stride = cb::grid_threads();
  long long v = cb::thread_index();  // the v-th vector from the end
  for (; v + (NORM_UNROLL - 1) * stride < vectors; v += NORM_UNROLL * stride) {
    cb::Vec<elem_t> p[NORM_UNROLL];
#pragma unroll
    for (int u = 0; u < NORM_UNROLL; ++u)
      p[u].raw = cb::load16_hinted(x + (vectors - 1 - (v + u * stride)) * kPack);
#pragma unroll
    for (int u = 0; u < NORM_UNROLL; ++u) {
      cb::pack_normalize(p[u], m, inv);
      cb::store16_stream(out + (vectors - 1 - (v + u * stride)) * kPack, p[u].raw);
    }
  }
  for (; v < vectors; v += stride) {
    cb::Vec<elem_t> p;
    p.raw = cb::load16_hinted(x + (vectors - 1 - v) * kPack);
    cb::pack_normalize(p, m, inv);
    cb::store16_stream(out + (vectors - 1 - v) * kPack, p.raw);
  }
  for (long long i = vectors * kPack + cb::thread_index(); i < cols; i += stride)
    out[i] = cb::from_float<elem_t>(__expf(cb::to_float(x[i]) - m) * inv);
}
