// Softmax building blocks: the online (max, sum) pair of a row segment and how two combine,
// over a warp and over a block. `sum` is the sum of exp(x - max) over the segment.
#pragma once

#include "common/reduce.cuh"
#include "common/warp.cuh"

namespace cb {

// The `split` grid rule (1-D softmax): `chunks` blocks stride over the one row together.
__device__ __forceinline__ long long split_index() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

struct MaxSum {
  float max, sum;
};

__device__ __forceinline__ MaxSum empty_max_sum() { return {Max::identity(), 0.0f}; }

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  if (a.max == Max::identity()) return b;  // an empty side: exp(-inf - -inf) would be NaN
  if (b.max == Max::identity()) return a;
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * __expf(a.max - m) + b.sum * __expf(b.max - m)};
}

// Fold one value into a running pair (a rescale only when the max moves).
__device__ __forceinline__ MaxSum push(MaxSum a, float x) {
  if (x > a.max) return {x, a.sum * __expf(a.max - x) + 1.0f};
  return {a.max, a.sum + __expf(x - a.max)};
}

// One 16-byte pack of a row (its max is hreduce<Max>): the sum of exp(x - m) over it, and
// x -> exp(x - m) * inv in place, the write pass.
__device__ __forceinline__ float pack_exp_sum(const Vec<elem_t>& v, float m) {
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < kPack; ++e) s += __expf(v.get(e) - m);
  return s;
}

__device__ __forceinline__ void pack_normalize(Vec<elem_t>& v, float m, float inv) {
#pragma unroll
  for (int e = 0; e < kPack; ++e) v.set(e, __expf(v.get(e) - m) * inv);
}

// The same two passes with one exponential an element: x -> exp(x - m) in place while summing,
// then the write pass only scales. For packs of floats (16-bit packs would round each
// exponential before the scaling; they keep the pair above).
__device__ __forceinline__ float pack_exp_sum_in_place(Vec<elem_t>& v, float m) {
  float s = 0.0f;
#pragma unroll
  for (int e = 0; e < kPack; ++e) {
    const float ex = __expf(v.get(e) - m);
    v.set(e, ex);
    s += ex;
  }
  return s;
}

__device__ __forceinline__ void pack_scale(Vec<elem_t>& v, float inv) {
#pragma unroll
  for (int e = 0; e < kPack; ++e) v.set(e, v.get(e) * inv);
}

__device__ __forceinline__ MaxSum warp_combine(MaxSum v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    MaxSum other{__shfl_xor_sync(kFullMask, v.max, offset), __shfl_xor_sync(kFullMask, v.sum, offset)};
    v = combine(v, other);
  }
  return v;
}

// Every thread of the block ends with the block's pair; `scratch` holds 64 floats.
__device__ __forceinline__ MaxSum block_combine(MaxSum v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_combine(v);
  __syncthreads();
  if (lane == 0) {
    scratch[warp] = v.max;
    scratch[32 + warp] = v.sum;
  }
  __syncthreads();
  MaxSum w = lane < warps ? MaxSum{scratch[lane], scratch[32 + lane]} : empty_max_sum();
  return warp_combine(w);
}

// The row's pair from the `chunks` block pairs a multi-kernel variant's first kernel left in
// `partials` (max, sum at 2i, 2i + 1); every thread of the block gets it. __ldcg: written by
// the previous kernel, read through L2.
__device__ __forceinline__ MaxSum combine_partials(const float* partials, int chunks,
                                                   float* scratch) {
  MaxSum acc = empty_max_sum();
  for (int i = threadIdx.x; i < chunks; i += blockDim.x)
    acc = combine(acc, MaxSum{__ldcg(&partials[2 * i]), __ldcg(&partials[2 * i + 1])});
  return block_combine(acc, scratch);
}

#ifndef UNROLL
#define UNROLL 4
#endif

// This thread's (max, sum) over its share of a 1-D row of `cols` (the `split` grid strides over
// it): kUnroll (default UNROLL) 16-byte streaming loads at a time when x and out are 16-byte
// aligned, one max and one rescale a batch (not an exp-and-compare a element), the tail one
// element at a time.
template <int kUnroll = UNROLL>
__device__ __forceinline__ MaxSum stream_max_sum(const elem_t* __restrict__ x,
                                                 const elem_t* __restrict__ out, long long cols) {
  MaxSum acc = empty_max_sum();
  const long long vectors = is_aligned16(x) && is_aligned16(out) ? cols / kPack : 0;
  const long long stride = grid_threads();
  long long v = thread_index();
  for (; v + (kUnroll - 1) * stride < vectors; v += kUnroll * stride) {
    Vec<elem_t> p[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) p[u].raw = load16_stream(x + (v + u * stride) * kPack);
    float m = -INFINITY;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) m = fmaxf(m, hreduce<Max>(p[u]));
    if (m == -INFINITY) continue;  // all -inf: nothing to add (and exp(-inf - -inf) is NaN)
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) s += pack_exp_sum(p[u], m);
    acc = combine(acc, MaxSum{m, s});
  }
  for (; v < vectors; v += stride) {
    Vec<elem_t> p;
    p.raw = load16_stream(x + v * kPack);
    const float m = hreduce<Max>(p);
    if (m != -INFINITY) acc = combine(acc, MaxSum{m, pack_exp_sum(p, m)});
  }
  for (long long i = vectors * kPack + thread_index(); i < cols; i += stride) {
    const float xi = to_float(x[i]);
    if (xi != -INFINITY) acc = push(acc, xi);
  }
  return acc;
}

}  // namespace cb
