// cudabench:
//   variant: bug_half_exp_cu
//   entry: silu_bug_half_exp_cu
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: planted - exp at half precision, hexp(-x) with -x rounded to half
#include "silu.cuh"

extern "C" __global__ void __launch_bounds__(256)
silu_bug_half_exp_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  silu::map<silu::kHalfExp>(x, out, n);
}
