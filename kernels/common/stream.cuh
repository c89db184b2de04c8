// Streaming over 16-byte vectors with UNROLL of them in flight a thread, in two layouts:
// - each_vector: a grid-stride loop over a grid sized by the op's `persistent` rule (GRID_K
//   blocks per SM, or as many as are resident);
// - tile_vector: the `tiles` rule, a block per BLOCK x UNROLL vectors, no loop: thread t of
//   block b takes vectors b x BLOCK x UNROLL + t + u x BLOCK, u < UNROLL, loads them all, then
//   uses them: a large grid of short blocks, as library copies and torch's elementwise
//   kernels launch (on an H200 the persistent copy fell 8% short of cudaMemcpy; the tile one,
//   UNROLL 1 and plain loads, matched it: docs/performance.md).
// The ceilings' kernels (ops/stream.py, `cudabench ceilings`) are built from these. Buffers
// that are not 16-byte aligned, and the last n % kPack elements, go one by one (each_element,
// a grid-stride loop, right for any grid).
#pragma once

#include "common/reduce.cuh"  // dtype.cuh (Vec, load16_stream, store16), block_sum
#include "common/warp.cuh"    // is_aligned16, thread_index, grid_threads

#ifndef UNROLL
#define UNROLL 4
#endif

namespace cb {

// body(v) for every 16-byte vector index v < vectors, UNROLL at a time a thread: the loads of
// one unrolled step are independent, so they are all in flight before the first is used.
template <class Body>
__device__ __forceinline__ void each_vector(long long vectors, Body body) {
  const long long stride = grid_threads();
  long long v = thread_index();
  for (; v + (UNROLL - 1) * stride < vectors; v += UNROLL * stride) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) body(v + u * stride);
  }
  for (; v < vectors; v += stride) body(v);
}

// The `tiles` layout: the index of this thread's u-th vector (check it against the count).
__device__ __forceinline__ long long tile_vector(int u) {
  return ((long long)blockIdx.x * UNROLL + u) * blockDim.x + threadIdx.x;
}

// body(i) for the elements the vector loop leaves (a tail, or everything when unaligned).
template <class Body>
__device__ __forceinline__ void each_element(long long first, long long n, Body body) {
  for (long long i = first + thread_index(); i < n; i += grid_threads()) body(i);
}

}  // namespace cb
