// cudabench:
//   variant: naive
//   entry: sigmoid_naive
//   block: 256
//   grid: elements
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element, __expf (seed 002 sigmoid)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
sigmoid_naive(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  cb::map(x, out, n, cb::Sigmoid());
}
