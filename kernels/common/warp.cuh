// Where a thread stands (its index in the grid, the grid's size; for the row ops - gemv,
// reduce_scale, softmax - which row its warp takes and its lane) and whether a buffer allows
// 16-byte accesses. The warp reductions themselves are
// reduce.cuh's cb::warp_reduce<Sum> / <Max> (every lane ends with the result).
#pragma once

#include <cstdint>

namespace cb {

// The thread's index in the whole grid (1-D launches), and the grid's thread count.
__device__ __forceinline__ long long thread_index() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_threads() { return (long long)gridDim.x * blockDim.x; }

__device__ __forceinline__ long long warp_row() {
  return ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

__device__ __forceinline__ bool is_aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0;
}

}  // namespace cb
