// cudabench:
//   variant: naive
//   entry: relu_naive
//   block: 256
//   grid: elements
//   about: a thread per element (seed 002 relu)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
relu_naive(const float* __restrict__ x, float* __restrict__ out, long long n) {
  cb::map(x, out, n, cb::Relu());
}
