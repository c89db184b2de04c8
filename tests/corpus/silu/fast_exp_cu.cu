// cudabench:
//   variant: fast_exp_cu
//   entry: silu_fast_exp_cu
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element, x / (1 + __expf(-x)) - fast math, accepted (ex2.approx of x * log2 e, as Triton)
#include "silu.cuh"

extern "C" __global__ void __launch_bounds__(256)
silu_fast_exp_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  silu::map<silu::kFastExp>(x, out, n);
}
