// cudabench:
//   variant: block_prefetch
//   entry: softmax_block_prefetch
//   block: 1024
//   grid: rows_persistent
//   requires: {max_cols: 32768, cols_multiple_of: 8}   # whole 16-byte packs in every dtype
//   dtypes: [float32, float16, bfloat16]
//   about: block_reg's row in registers, but a block an SM loops over rows and fetches the next row into shared memory (cp.async) while it reduces and writes this one, so the SM's loads never stop
//
// block_reg holds a 32768-float row in one 1024-thread block's registers: half an SM's register
// file, so an SM runs one row at a time and asks DRAM for nothing while that row is reduced
// and written (under ncu 77% of the DRAM peak). Here the block stays on its SM and walks rows
// r, r + grid, ...: the row it works on sits in registers, and the next one streams into shared
// memory (cp.async: global to shared with no register in between) as soon as this one has been
// copied out of it. Each thread copies, and later reads back, only its own packs, so the buffer
// needs no barrier, just each thread's wait for its own copies. Shared memory: one row, cols x
// element size (128 KiB at 32768 floats: the runner opts in above 48 KiB).
#include "common/softmax.cuh"

using cb::kPack;

// 16 bytes global -> shared, bypassing L1 (.cg), in flight until cp_async_wait.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// Thread t's packs of a row: t, t + 1024, ... (int: a row has at most 8192 of them).
template <int kPacks>
__device__ __forceinline__ void fetch_row(uint4* buf, const elem_t* __restrict__ row, int nv) {
  const uint4* src = reinterpret_cast<const uint4*>(row);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int j = threadIdx.x + 1024 * p;
    if (j < nv) cp_async16(&buf[j], &src[j]);
  }
  cp_async_commit();
}

template <int kPacks>
__device__ __forceinline__ void softmax_rows(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                             long long rows, long long cols, uint4* buf,
                                             float* scratch) {
  const int nv = static_cast<int>(cols / kPack);
  long long r = blockIdx.x;
  if (r < rows) fetch_row<kPacks>(buf, x + r * cols, nv);
  for (; r < rows; r += gridDim.x) {
    cb::Vec<elem_t> v[kPacks];
    cp_async_wait();  // this thread's packs of row r are in buf
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int j = threadIdx.x + 1024 * p;
      v[p].raw = j < nv ? buf[j] : make_uint4(0, 0, 0, 0);
    }
    float m = -INFINITY;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (threadIdx.x + 1024 * p < nv) m = fmaxf(m, cb::hreduce<cb::Max>(v[p]));
    // the next row's copies overwrite buf: issued after m, which used every value read from
    // it, so no copy can land before its slot was read
    if (r + gridDim.x < rows) fetch_row<kPacks>(buf, x + (r + gridDim.x) * cols, nv);
    m = cb::block_reduce<cb::Max>(m, scratch);
    float s = 0.0f;
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (threadIdx.x + 1024 * p < nv) s += cb::pack_exp_sum(v[p], m);
    const float inv = 1.0f / cb::block_reduce<cb::Sum>(s, scratch);
    uint4* dst = reinterpret_cast<uint4*>(out + r * cols);
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int j = threadIdx.x + 1024 * p;
      if (j < nv) {
        cb::pack_normalize(v[p], m, inv);
        __stcs(&dst[j], v[p].raw);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_block_prefetch(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                       long long rows, long long cols, int chunks) {
  extern __shared__ uint4 buf[];  // cols x element size bytes: the row being fetched
  __shared__ float scratch[32];
  constexpr long long kStep = 1024LL * kPack;  // elements one pack a thread covers
  if (cols <= kStep) softmax_rows<1>(x, out, rows, cols, buf, scratch);
  else if (cols <= 2 * kStep) softmax_rows<2>(x, out, rows, cols, buf, scratch);
  else if (cols <= 4 * kStep) softmax_rows<4>(x, out, rows, cols, buf, scratch);
  else softmax_rows<8>(x, out, rows, cols, buf, scratch);
}
