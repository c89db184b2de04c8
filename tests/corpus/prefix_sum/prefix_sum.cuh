// prefix_sum's CUDA variants: the inclusive prefix sum of each row, a block per row, in tiles
// of 1024 elements: each thread scans 4 consecutive elements sequentially, a shuffle scan gives
// each thread the sum of the threads before it, and a running total carries the tiles before.
// The planted faults are `scan` with one template argument changed.
#pragma once

#include "../rows.cuh"

namespace prefix_sum {

enum Fault {
  kNone,
  kExclusive,  // writes the sum of the elements before each one (an exclusive scan)
  kDropLast,   // the last element of each row is left out (its output repeats the one before)
  kAcc16,      // every running sum rounded to the element type
};

constexpr int kItems = 4;  // consecutive elements a thread scans

template <int F>
__device__ __forceinline__ void scan(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
                                     long long cols) {
  constexpr bool acc16 = F == kAcc16;
  __shared__ float warp_total[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* xr = x + row * cols;
  elem_t* yr = out + row * cols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  const long long added = F == kDropLast ? cols - 1 : cols;  // the elements the scan adds up
  const long long tile = (long long)blockDim.x * kItems;
  float carry = 0.0f;  // the sum of the tiles before this one
  for (long long base = 0; base < cols; base += tile) {  // the same trip count in every thread
    const long long c0 = base + (long long)threadIdx.x * kItems;
    float own[kItems];  // inclusive sums of this thread's elements
    float run = 0.0f;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const long long c = c0 + i;
      run = corpus::add<acc16>(run, c < added ? corpus::load(xr, c) : 0.0f);
      own[i] = run;
    }
    // inclusive scan of the threads' totals over the warp (Hillis-Steele by shuffles)
    float t = run;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const float y = __shfl_up_sync(cb::kFullMask, t, o);
      if (lane >= o) t = corpus::add<acc16>(y, t);
    }
    float before_thread = __shfl_up_sync(cb::kFullMask, t, 1);  // the warp's lanes before this one
    if (lane == 0) before_thread = 0.0f;
    if (lane == 31) warp_total[warp] = t;
    __syncthreads();
    float before_warp = 0.0f, tile_total = 0.0f;
    for (int k = 0; k < warps; ++k) {
      if (k < warp) before_warp = corpus::add<acc16>(before_warp, warp_total[k]);
      tile_total = corpus::add<acc16>(tile_total, warp_total[k]);
    }
    __syncthreads();  // warp_total is written again for the next tile
    const float prefix = corpus::add<acc16>(carry, corpus::add<acc16>(before_warp, before_thread));
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const long long c = c0 + i;
      if (c >= cols) break;
      const float mine = F == kExclusive ? (i > 0 ? own[i - 1] : 0.0f) : own[i];
      corpus::store(yr, c, corpus::add<acc16>(prefix, mine));
    }
    carry = corpus::add<acc16>(carry, tile_total);
  }
}

}  // namespace prefix_sum
