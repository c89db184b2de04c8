// cudabench:
//   variant: atomic
//   entry: reduce_max_atomic
//   block: 256
//   grid: segments
//   init: nan
//   about: one pass, each block max goes into out[row] by an atomicCAS loop on the float bits (seed 001 reduce_max_atomic)
//
// CUDA has no atomicMax for floats; seed 001 builds one from atomicCAS: read the current
// value, and while ours is larger, try to swap it in. The output is filled with NaN before
// every launch (header `init: nan`) and a NaN counts as empty, so no -inf fill kernel is
// needed. Short rows (a warp per 4 rows) have nothing to combine and store directly.
#include "common/reduce.cuh"

__device__ __forceinline__ void atomic_max_float(float* address, float value) {
  int* bits = reinterpret_cast<int*>(address);
  int old = *reinterpret_cast<volatile int*>(bits);
  while (value > __int_as_float(old) || isnan(__int_as_float(old))) {
    const int seen = atomicCAS(bits, old, __float_as_int(value));
    if (seen == old) break;
    old = seen;
  }
}

extern "C" __global__ void __launch_bounds__(256)
reduce_max_atomic(const float* __restrict__ x, float* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  if (group == 32) {
    cb::reduce_short_rows<true, cb::Max>(x, out, rows, cols);
    return;
  }
  const cb::Segment s = cb::segment_of_block(chunks);
  const float v = cb::segment_reduce<true, cb::Max>(x, cols, s, chunks, scratch);
  if (threadIdx.x == 0) atomic_max_float(&out[s.row], v);
}
