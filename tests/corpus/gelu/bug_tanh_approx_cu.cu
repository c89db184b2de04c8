// cudabench:
//   variant: bug_tanh_approx_cu
//   entry: gelu_bug_tanh_approx_cu
//   block: 256
//   grid: thread
//   dtypes: [float32, float16, bfloat16]
//   about: planted - the tanh approximation of GELU instead of erf
#include "gelu.cuh"

extern "C" __global__ void __launch_bounds__(256)
gelu_bug_tanh_approx_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  gelu::map<gelu::kTanh>(x, out, n);
}
