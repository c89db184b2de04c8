// Building blocks of the corpus's CUDA variants (tests/corpus/<op>/*.cu, each op's own
// <op>.cuh includes this as "../rows.cuh"): a block of 256 threads per row, elements loaded as
// elem_t (common/dtype.cuh: float, __half or __nv_bfloat16) and every sum taken in float32.
//
// The planted faults are the same code with one thing changed, chosen at compile time by a
// template argument; `kAcc16` is the fault "accumulation in the 16-bit type": every partial
// sum rounded to elem_t (a no-op for float32, so those variants declare the 16-bit dtypes only).
#pragma once

#include "common/dtype.cuh"
#include "common/reduce.cuh"  // cb::block_reduce, cb::Sum, cb::Max

namespace corpus {

constexpr int kThreads = 256;  // the headers' `block: 256`

__device__ __forceinline__ float load(const elem_t* __restrict__ p, long long i) {
  return cb::to_float(p[i]);
}
__device__ __forceinline__ void store(elem_t* __restrict__ p, long long i, float v) {
  p[i] = cb::from_float<elem_t>(v);
}

// float32 rounded to the element type and back: what a 16-bit accumulator holds.
__device__ __forceinline__ float round16(float v) { return cb::to_float(cb::from_float<elem_t>(v)); }

// a + b in float32, or rounded to the element type (kAcc16: the planted fault).
template <bool kAcc16>
__device__ __forceinline__ float add(float a, float b) {
  return kAcc16 ? round16(a + b) : a + b;
}

// Addition rounded to the element type: cb::Sum with a 16-bit accumulator (kAcc16's fault).
struct Sum16 {
  static __device__ __forceinline__ float identity() { return 0.0f; }
  static __device__ __forceinline__ float combine(float a, float b) { return round16(a + b); }
};

// The sum of v over the block, every thread ending with it (cb::block_reduce: a shuffle tree
// in each warp, then the warps' totals in `scratch`, 32 floats of shared memory), each partial
// sum rounded to elem_t with kAcc16. Every thread of the block must call it.
template <bool kAcc16 = false>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return kAcc16 ? cb::block_reduce<Sum16>(v, scratch) : cb::block_reduce<cb::Sum>(v, scratch);
}

// The sum of x^2 over a row's first `summed` elements, each thread striding by the block,
// then over the block (every thread ending with it).
template <bool kAcc16>
__device__ __forceinline__ float sum_of_squares(const elem_t* __restrict__ xr, long long summed, float* scratch) {
  float q = 0.0f;
  for (long long c = threadIdx.x; c < summed; c += blockDim.x) {
    const float v = load(xr, c);
    q = add<kAcc16>(q, v * v);
  }
  return block_sum<kAcc16>(q, scratch);
}

// The row's maximum (exact in any order), every thread ending with it.
__device__ __forceinline__ float block_max(float v, float* scratch) {
  return cb::block_reduce<cb::Max>(v, scratch);
}

// max over a row of `cols` elements, each thread striding by the block.
__device__ __forceinline__ float row_max(const elem_t* __restrict__ xr, long long cols, float* scratch) {
  float m = cb::Max::identity();
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, load(xr, c));
  return block_max(m, scratch);
}

// exp as the accurate expf (2 ulp) or as fast math's __expf: ex2.approx(x * log2 e), the
// product rounded to float32 first (Triton's exp and torch.compile's are the same); the
// tolerance allows for that rounding (ops/errorbound: EXP_ARG), so __expf is not a fault.
template <bool kFast>
__device__ __forceinline__ float exp_of(float x) {
  return kFast ? __expf(x) : expf(x);
}

}  // namespace corpus
