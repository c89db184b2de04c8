// cudabench:
//   variant: naive
//   entry: sigmoid_naive
//   block: 256
//   grid: elements
//   about: a thread per element, __expf (seed 002 sigmoid)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
sigmoid_naive(const float* __restrict__ x, float* __restrict__ out, long long n) {
  cb::map(x, out, n, cb::Sigmoid());
}
