// cudabench:
//   variant: bug_var_n1_cu
//   entry: layernorm_bug_var_n1
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block with the variance over n - 1
#include "layernorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
layernorm_bug_var_n1(const elem_t* __restrict__ x, const elem_t* __restrict__ w, const elem_t* __restrict__ b,
  elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  layernorm::two_pass<layernorm::kVarN1>(x, w, b, out, rows, cols, eps);
}
