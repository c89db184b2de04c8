// The memory ceilings' kernels (ops/stream.py, `cudabench ceilings`): a grid-stride loop over
// 16-byte vectors with UNROLL of them in flight a thread, over a grid sized by the op's
// `persistent` rule (GRID_K blocks per SM, or as many as are resident). The kernel is all
// loads and stores: what it reaches is what this traffic mix can reach on the card.
// Buffers that are not 16-byte aligned, and the last n % kPack elements, go one by one.
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

// body(i) for the elements the vector loop leaves (a tail, or everything when unaligned).
template <class Body>
__device__ __forceinline__ void each_element(long long first, long long n, Body body) {
  for (long long i = first + thread_index(); i < n; i += grid_threads()) body(i);
}

}  // namespace cb
