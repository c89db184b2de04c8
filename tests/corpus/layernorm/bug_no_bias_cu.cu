// cudabench:
//   variant: bug_no_bias_cu
//   entry: layernorm_bug_no_bias
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block without + b
#include "layernorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
layernorm_bug_no_bias(const elem_t* __restrict__ x, const elem_t* __restrict__ w, const elem_t* __restrict__ b,
  elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  layernorm::two_pass<layernorm::kNoBias>(x, w, b, out, rows, cols, eps);
}
