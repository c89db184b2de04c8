// cudabench:
//   variant: naive
//   entry: add_naive
//   block: 256
//   grid: elements
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element (seed 002 elementwise_add)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
add_naive(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ out,
          long long n) {
  cb::map(a, b, out, n, cb::Add());
}
