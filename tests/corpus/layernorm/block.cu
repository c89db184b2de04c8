// cudabench:
//   variant: block
//   entry: layernorm_block
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, two passes (the mean, then the squared deviations), rsqrtf, (x - mean) * rstd * w + b
#include "layernorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
layernorm_block(const elem_t* __restrict__ x, const elem_t* __restrict__ w, const elem_t* __restrict__ b,
  elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  layernorm::two_pass<layernorm::kNone>(x, w, b, out, rows, cols, eps);
}
