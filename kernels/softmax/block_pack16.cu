// cudabench:
//   variant: block_pack16
//   entry: softmax_block_pack16
//   block: BLOCK
//   grid: row_block
//   params:
//     BLOCK: [256, 128, 512]  # threads a row; the row in registers up to 4096 columns (+ 7) at every BLOCK
//     KEEP: [1, 0]            # 1: the exponentials kept in float registers between the sum and the store; 0: computed again
//     STREAM: [0, 1]          # 1: ld.global.nc.L1::no_allocate loads and st.global.cs stores
//   requires: {max_cols: 65536}
//   dtypes: [bfloat16, float16]
//   about: 16-bit softmax of rows of a few thousand columns, a block per row held in registers (4096 columns = 2 packs of 16 bytes a thread at BLOCK 256), every load issued before any arithmetic, max on packed pairs, ex2.approx on x*log2e - m*log2e, two barriers (max, sum), 16-byte stores; any column count and row start (16-byte packs from the row's first 16-byte boundary, a scalar head and tail)
//
// Why (docs/performance/softmax.md): block_smem, the best before at 13824x4096 in 16 bits
// (77% of the DRAM peak on an H100), loads a row pack by pack through a loop, converts every
// element to a float in shared memory, and reduces twice with __expf and a division; each
// thread has one 16-byte load in flight at a time. Here a block's whole row (8 KiB at 4096
// columns) is in flight at once, held as raw 16-bit packs (4 registers a pack), reduced on
// packed pairs (one max.bf16x2 for two elements) and written from float exponentials: the
// same steps that took warp_pack16 to a copy's pace on rows of 128. Triton's program-per-row
// kernel (8 warps, the row in registers) reached 85.9% of the peak on the same case (an H100,
// docs/guide/ops.md), which says the layout can; this one spends fewer instructions an
// element on the way.
//
// Rows whose byte length is not a multiple of 16 (cols % 8 != 0) start anywhere: the packs
// then start at the row's first 16-byte boundary, and threads 0 .. 13 take the 0-7 elements
// before it and the 0-7 after the last pack one each (kernels/common/rows16.cuh). Rows longer
// than the registers hold (above 4096 + 7 columns: more than 512 / BLOCK packs a thread, the
// most this kernel is compiled for, so that the 4096-column path keeps its registers) and
// inputs whose x and out do not share an offset from a 16-byte boundary take a fallback that
// reads the row twice.
#include "common/rows16.cuh"

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef KEEP
#define KEEP 1
#endif
#ifndef STREAM
#define STREAM 0
#endif
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK: whole warps");

namespace {

// the most packs a thread holds: 4096 columns (512 packs) over the block, at least one
constexpr int kMaxPacks = 512 / BLOCK > 1 ? 512 / BLOCK : 1;

// The smallest power of two P >= the thread's share of packs that this kernel is compiled
// for, else the fallback.
template <int P>
__device__ __forceinline__ void dispatch(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                         long long cols, const cb::rows16::Span& s, float* red) {
  if constexpr (P > kMaxPacks) {
    cb::rows16::row_fallback(x, out, cols, red);
  } else {
    if (s.nv <= P * BLOCK) cb::rows16::row<BLOCK, P, P, KEEP != 0, STREAM != 0>(x, out, s, nullptr, red);
    else dispatch<2 * P>(x, out, cols, s, red);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_block_pack16(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                     long long rows, long long cols, int chunks) {
  __shared__ float red[64];  // the block's (max, sum) exchange; 64 floats for the fallback
  const elem_t* row = x + (long long)blockIdx.x * cols;
  elem_t* dst = out + (long long)blockIdx.x * cols;
  const cb::rows16::Span s =
      cb::rows16::span(reinterpret_cast<std::uintptr_t>(row), reinterpret_cast<std::uintptr_t>(dst), cols);
  if (s.ok) dispatch<1>(row, dst, cols, s, red);
  else cb::rows16::row_fallback(row, dst, cols, red);
}
