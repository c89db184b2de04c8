// cudabench:
//   variant: naive
//   entry: reduce_sum_naive
//   block: 256
//   grid: elements
//   init: zero
//   about: one thread per element, one atomicAdd each into out[row] (seed 002 reduce_v1)
//
// Every element is its own atomic: the adds to one row serialize in L2. The output is zeroed
// before every launch (init: zero), and that memset is part of the timed launch.

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_naive(const float* __restrict__ x, float* __restrict__ out, float* partials,
                 unsigned* counters, long long rows, long long cols, int group, int chunks) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) atomicAdd(&out[i / cols], x[i]);
}
