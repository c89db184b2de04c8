// cudabench:
//   variant: block_reg
//   entry: softmax_block_reg
//   block: 1024
//   grid: row_block
//   params:
//     STAGGER_NS: [500, 0, 1000, 2000]  # the first wave's blocks start in PHASES groups this many ns apart (0: together)
//     PHASES: [8, 2, 4]
//   requires: {max_cols: 32768, cols_multiple_of: 8}   # whole 16-byte packs in every dtype
//   dtypes: [float32, float16, bfloat16]
//   about: a block of 1024 threads per row held in registers (up to 8 float4 a thread, 32768 floats a row), one read and one write, for rows too long for shared memory; the first wave starts staggered (STAGGER_NS) so the SMs do not load and store in step
//
// block_uncached reads a long row twice (the online max and sum, then the write pass);
// holding it in registers instead reads it once. 32768 floats over 1024 threads is 32 a
// thread: 8 packs of 4, within the 64 registers a thread of a 1024-thread block may have
// (32768 halves: 4 packs of 8, half the registers). Plain loads and stores: the streaming forms
// (ld.global.nc.L1::no_allocate, st.global.cs) measured 3-4% slower on an H200 at 1728x32768
// (float32 121.2 against 117.4 us, bfloat16 87.8 against 84.0; docs/performance.md), as for
// warp_xor and the elementwise ops: in a read + write mix they cost more than they keep.
//
// One block an SM, each loading its row, reducing it (DRAM idle for this SM) and storing it:
// blocks that start together stay in step, wave after wave, since the next block on an SM
// starts when the last one leaves, so the whole GPU loads, then waits, then stores. STAGGER_NS
// puts the first wave's blocks (blockIdx < %nsmid, the SM count or a little more) in PHASES
// groups that start STAGGER_NS apart (__nanosleep), and their SMs keep that offset: at 1728x32768
// float32 on an H200, 114.3-114.5 us against 116.6-116.8 in step (interleaved, four runs;
// docs/performance.md); wider or finer spreads than ~3.5 us gained less. 8 groups 500 ns
// apart, with the exponentials kept: 113.4 us in five of six interleaved runs, against
// 113.8-114.0 at 4 x 1000 in the same runs.
#include "common/softmax.cuh"

using cb::kPack;  // elements in a 16-byte pack: 4 floats or 8 halves

// The row held in registers as kPacks packs a thread (kept in its own type: 8 halves take the
// registers of 4 floats); the max and the sum of exponentials are taken in float. In float32
// each exp(x - m) replaces its x, so the store pass only scales: one exponential an element,
// not two. The SM computes them with no loads of its own in flight, between the row's last
// load and its first store, so halving them shortened the run: 113.4 against 114.2-114.3 us
// at 1728x32768 on an H200 (docs/performance.md). In 16 bits a pack holds halves, which would
// round the exponentials before the scaling, so they are computed again for the store.
constexpr bool kKeepExp = sizeof(elem_t) == 4;

template <int kPacks>
__device__ __forceinline__ void softmax_block_row(const elem_t* __restrict__ row,
                                                  elem_t* __restrict__ dst, long long cols,
                                                  float* scratch) {
  const long long nv = cols / kPack;
  cb::Vec<elem_t> v[kPacks];
  float m = -INFINITY;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = threadIdx.x + 1024LL * p;
    v[p].raw = j < nv ? cb::load16(row + j * kPack) : make_uint4(0, 0, 0, 0);
    if (j < nv) m = fmaxf(m, cb::hreduce<cb::Max>(v[p]));
  }
  m = cb::block_reduce<cb::Max>(m, scratch);
  float s = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p)
    if (threadIdx.x + 1024LL * p < nv) s += kKeepExp ? cb::pack_exp_sum_in_place(v[p], m) : cb::pack_exp_sum(v[p], m);
  const float inv = 1.0f / cb::block_reduce<cb::Sum>(s, scratch);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = threadIdx.x + 1024LL * p;
    if (j < nv) {
      if (kKeepExp) cb::pack_scale(v[p], inv);
      else cb::pack_normalize(v[p], m, inv);
      cb::store16(dst + j * kPack, v[p].raw);
    }
  }
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_block_reg(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                  long long rows, long long cols, int chunks) {
  __shared__ float scratch[32];
  if (STAGGER_NS > 0) {
    unsigned sms;
    asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
    const unsigned phase = blockIdx.x % PHASES;
    if (blockIdx.x < sms && phase > 0) __nanosleep(phase * STAGGER_NS);
  }
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  constexpr long long kStep = 1024LL * kPack;  // elements one pack a thread covers
  if (cols <= kStep) softmax_block_row<1>(row, dst, cols, scratch);
  else if (cols <= 2 * kStep) softmax_block_row<2>(row, dst, cols, scratch);
  else if (cols <= 4 * kStep) softmax_block_row<4>(row, dst, cols, scratch);
  else softmax_block_row<8>(row, dst, cols, scratch);
}
