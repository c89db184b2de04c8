// cudabench:
//   variant: erf
//   entry: gelu_erf
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element, 0.5f * x * (1 + erff(x / sqrt 2)) as torch's kernel
#include "gelu.cuh"

extern "C" __global__ void __launch_bounds__(256)
gelu_erf(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  gelu::map<gelu::kErf>(x, out, n);
}
