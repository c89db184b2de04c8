// cudabench:
//   variant: expf
//   entry: silu_expf
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element, x / (1 + expf(-x))
#include "silu.cuh"

extern "C" __global__ void __launch_bounds__(256)
silu_expf(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  silu::map<silu::kExpf>(x, out, n);
}
