// cudabench:
//   variant: erfc
//   entry: gelu_erfc
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element, 0.5f * x * erfcf(-x / sqrt 2) (no cancellation for x << 0)
#include "gelu.cuh"

extern "C" __global__ void __launch_bounds__(256)
gelu_erfc(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  gelu::map<gelu::kErfc>(x, out, n);
}
