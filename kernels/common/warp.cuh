// Warp-level helpers for the row ops (gemv, reduce_scale, softmax): which row a warp takes,
// its lane, and whether a buffer allows 16-byte accesses. The warp reductions themselves are
// reduce.cuh's cb::warp_reduce<Sum> / <Max> (every lane ends with the result).
#pragma once

#include <cstdint>

namespace cb {

__device__ __forceinline__ long long warp_row() {
  return ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

__device__ __forceinline__ bool is_aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0;
}

}  // namespace cb
