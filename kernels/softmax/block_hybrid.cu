// cudabench:
//   variant: block_hybrid
//   entry: softmax_block_hybrid
//   block: BLOCK
//   grid: row_block_hybrid
//   params:
//     BLOCK: [512, 256]
//     REG_PACKS: [8, 4]   # 16-byte packs a thread holds in registers; the rest of its share of the row sits in shared memory
//   requires: {max_cols: 32768, cols_multiple_of: 8}   # whole 16-byte packs in every dtype
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the row held part in registers and part in shared memory (filled by cp.async), one online (max, sum) reduction - two rows resident an SM where block_reg fits one
//
// block_reg holds a 32768-float row in a 1024-thread block's registers: half the SM's register
// file, so an SM works on one row at a time and its loads stop while the block reduces (under
// ncu on an H200 77% of the DRAM peak, docs/performance.md). Registers and shared memory
// together hold two such rows: here a block of BLOCK threads keeps REG_PACKS of its packs in
// registers and the rest in shared memory (at 32768 floats and BLOCK 512: 8 + 8 packs a thread,
// 64 KiB of shared memory a block), so two blocks, two rows, share an SM and one loads while
// the other reduces. The shared packs arrive by cp.async (global to shared, no register in
// between), issued before the register loads so the whole row is in flight at once. Each
// thread copies and reads back only its own slots, so they need no barrier, only the thread's
// wait for its copies. Each thread takes its part's max and sum of exp(x - max) locally and
// the block combines the pairs once (block_reg reduces twice: the max, then the sum).
//
// Measured on an H200 at 1728x32768 (2026-11-24, docs/performance.md): in bfloat16, where
// block_reg's 1024 threads hold a 64 KiB row and so an SM only 64 KiB, two rows of 8 packs a
// thread all in registers: 71.8 us against block_reg's 87.6 (torch 113.5). In float32 no gain
// (121.4-121.9 us against 120.9; ncu DRAM 74.1% against 76.4% at the same 50% occupancy): twice
// the bytes an SM in flight does not move more, so block_reg is not short of loads in flight.
// before the includes: common/reduce.cuh gives BLOCK a default of its own (256)
#ifndef BLOCK
#define BLOCK 512
#endif
#include "common/softmax.cuh"

using cb::cp_async16;
using cb::cp_async_wait_all;
using cb::kPack;

#ifndef REG_PACKS
#define REG_PACKS 8
#endif

// Thread t's packs of a row are t + BLOCK x p, p < kPacks: the first kReg in registers, the
// others in shared slot (p - kReg) x BLOCK + t.
template <int kPacks>
__device__ __forceinline__ void softmax_hybrid_row(const elem_t* __restrict__ row,
                                                   elem_t* __restrict__ dst, int nv,
                                                   uint4* shared, float* scratch) {
  constexpr int kReg = kPacks < REG_PACKS ? kPacks : REG_PACKS;
  constexpr int kShared = kPacks - kReg;
  const uint4* src = reinterpret_cast<const uint4*>(row);
#pragma unroll
  for (int p = 0; p < kShared; ++p) {
    const int j = threadIdx.x + BLOCK * (kReg + p);
    if (j < nv) cp_async16(&shared[p * BLOCK + threadIdx.x], &src[j]);
  }
  cb::Vec<elem_t> v[kReg];
#pragma unroll
  for (int p = 0; p < kReg; ++p) {
    const int j = threadIdx.x + BLOCK * p;
    v[p].raw = j < nv ? cb::load16(&src[j]) : make_uint4(0, 0, 0, 0);
  }
  // pack p of this thread, from its register or its shared slot (p is unrolled: no branch)
  auto pack = [&](int p) {
    if (p < kReg) return v[p];
    cb::Vec<elem_t> w;
    w.raw = shared[(p - kReg) * BLOCK + threadIdx.x];
    return w;
  };
  auto here = [&](int p) { return threadIdx.x + BLOCK * p < nv; };
  float m = -INFINITY;
#pragma unroll
  for (int p = 0; p < kReg; ++p)  // the register packs while the shared ones still land
    if (here(p)) m = fmaxf(m, cb::hreduce<cb::Max>(v[p]));
  cp_async_wait_all();  // this thread's shared packs have landed
#pragma unroll
  for (int p = kReg; p < kPacks; ++p)
    if (here(p)) m = fmaxf(m, cb::hreduce<cb::Max>(pack(p)));
  float s = 0.0f;  // this thread's sum of exp(x - m), m its own max (-inf: no packs, sum 0)
  if (m != -INFINITY) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (here(p)) s += cb::pack_exp_sum(pack(p), m);
  }
  const cb::MaxSum all = cb::block_combine(cb::MaxSum{m, s}, scratch);
  const float inv = 1.0f / all.sum;
  uint4* out = reinterpret_cast<uint4*>(dst);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    if (here(p)) {
      cb::Vec<elem_t> w = pack(p);
      cb::pack_normalize(w, all.max, inv);
      out[threadIdx.x + BLOCK * p] = w.raw;
    }
  }
}

// Packs a thread: the power of two the runner's `row_block_hybrid` rule sizes the shared
// memory by, (that - REG_PACKS) x BLOCK x 16 bytes.
extern "C" __global__ void __launch_bounds__(BLOCK, 1024 / BLOCK)
softmax_block_hybrid(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     long long rows, long long cols, int chunks) {
  extern __shared__ uint4 shared[];
  __shared__ float scratch[64];
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  const int nv = static_cast<int>(cols / kPack);  // a row has at most 8192 packs
  const int per = (nv + BLOCK - 1) / BLOCK;
  if (per <= 1) softmax_hybrid_row<1>(row, dst, nv, shared, scratch);
  else if (per <= 2) softmax_hybrid_row<2>(row, dst, nv, shared, scratch);
  else if (per <= 4) softmax_hybrid_row<4>(row, dst, nv, shared, scratch);
  else if (per <= 8) softmax_hybrid_row<8>(row, dst, nv, shared, scratch);
  else if (per <= 16) softmax_hybrid_row<16>(row, dst, nv, shared, scratch);
  else softmax_hybrid_row<32>(row, dst, nv, shared, scratch);
}
