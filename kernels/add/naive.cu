// cudabench:
//   variant: naive
//   entry: add_naive
//   block: 256
//   grid: elements
//   about: a thread per element (seed 002 elementwise_add)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
add_naive(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
          long long n) {
  cb::map(a, b, out, n, cb::Add());
}
