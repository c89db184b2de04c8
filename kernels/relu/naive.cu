// cudabench:
//   variant: naive
//   entry: relu_naive
//   block: 256
//   grid: elements
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element (seed 002 relu)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
relu_naive(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  cb::map(x, out, n, cb::Relu());
}
