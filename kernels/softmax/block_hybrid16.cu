// cudabench:
//   variant: block_hybrid16
//   entry: softmax_block_hybrid16
//   block: BLOCK
//   grid: row_block_hybrid
//   params:
//     BLOCK: [512, 256, 1024]
//     REG_PACKS: [2, 4, 1]   # 16-byte packs a thread holds in registers; the rest of its share of the row sits in shared memory
//     ROWS_SM: [4, 3, 2]     # blocks (rows) an SM the launch bounds size registers for
//     STREAM: [0, 1]         # 1: ld.global.nc.L1::no_allocate loads and st.global.cs stores
//   constraints: ["BLOCK * ROWS_SM <= 2048", "REG_PACKS * BLOCK * ROWS_SM <= 4096"]   # threads an SM; registers (more spill)
//   requires: {max_cols: 65536}
//   dtypes: [bfloat16, float16]
//   about: 16-bit softmax of long rows (up to 32768 + 7 columns in one read, longer up to 65536 by a fallback), a block per row read once and written once, the row part in registers and part in shared memory (cp.async), sized so that four 64 KiB rows share an SM where block_hybrid holds two; max on packed pairs, ex2.approx on x*log2e - m*log2e, two barriers; any column count and row start (a scalar head and tail)
//
// Why (docs/performance/softmax.md): at 1728x32768 in 16 bits a row is 64 KiB. block_reg's
// 1024-thread block holds one in registers (one row an SM: its loads stop while it reduces);
// block_hybrid, the best before (82% of the H100's DRAM peak), holds two an SM, all in
// registers (512 threads x 8 packs, 64 registers a thread). Registers (256 KiB an SM) and
// shared memory (228 KiB) together hold seven such rows. Here a thread of a 512-thread block
// keeps REG_PACKS = 2 of its 8 packs in registers (8 registers) and 6 in shared memory
// (48 KiB a block), and the launch bounds ask for ROWS_SM = 4 blocks an SM (32 registers a
// thread): four rows an SM, each at its own step, so that while one reduces and stores the
// others' loads keep DRAM busy. The shared packs arrive by cp.async (no register on the way),
// issued before the register loads; each thread reads back only its own slots, so they need
// no barrier, only the thread's own wait. Each element's exponential is computed twice (for
// the sum, and for the store: the registers hold 16-bit packs, not float exponentials), one
// FFMA and one MUFU.EX2 each time.
//
// The grid rule `row_block_hybrid` gives (P - REG_PACKS) x BLOCK x 16 bytes of dynamic shared
// memory, P the power of two >= the row's 16-byte packs (cols / 8) over the block; the kernel
// dispatches on the same P. Rows that are not whole packs (cols % 8) start anywhere: their
// packs start at the row's first 16-byte boundary (at most cols / 8 of them), the 0-7
// elements before and after go one to a thread (kernels/common/rows16.cuh).
// before the includes: common/reduce.cuh gives BLOCK a default of its own (256)
#ifndef BLOCK
#define BLOCK 512
#endif
#include "common/rows16.cuh"

#ifndef REG_PACKS
#define REG_PACKS 2
#endif
#ifndef ROWS_SM
#define ROWS_SM 4
#endif
#ifndef STREAM
#define STREAM 0
#endif
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK: whole warps");
static_assert(REG_PACKS >= 1, "REG_PACKS: at least one pack in registers");

namespace {

// the most packs a thread holds: 4096 (32768 + 7 columns) over the block; longer rows (up to
// 65536 columns, the header's max_cols) take the fallback: compiled for more, the 32768-column
// path spilled at 32 registers
constexpr int kMaxPacks = 4096 / BLOCK > 1 ? 4096 / BLOCK : 1;

template <int P>
__device__ __forceinline__ void dispatch(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                         long long cols, int per, const cb::rows16::Span& s,
                                         uint4* shared, float* red) {
  if constexpr (P > kMaxPacks) {
    cb::rows16::row_fallback(x, out, cols, red);
  } else {
    constexpr int kReg = P < REG_PACKS ? P : REG_PACKS;
    if (per <= P) cb::rows16::row<BLOCK, P, kReg, false, STREAM != 0>(x, out, s, shared, red);
    else dispatch<2 * P>(x, out, cols, per, s, shared, red);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK, ROWS_SM)
softmax_block_hybrid16(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                       long long rows, long long cols, int chunks) {
  extern __shared__ uint4 shared[];  // (P - REG_PACKS) x BLOCK packs (the grid rule's)
  __shared__ float red[64];
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  const cb::rows16::Span s =
      cb::rows16::span(reinterpret_cast<std::uintptr_t>(row), reinterpret_cast<std::uintptr_t>(dst), cols);
  // a thread's share of the row's cols / 8 packs, as the grid rule counts them (the packs
  // from the first 16-byte boundary are at most as many)
  const int per = (int)((cols / 8 + BLOCK - 1) / BLOCK);
  if (s.ok) dispatch<1>(row, dst, cols, per, s, shared, red);
  else cb::rows16::row_fallback(row, dst, cols, red);
}
