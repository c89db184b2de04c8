// cudabench:
//   variant: bug_acc16_cu
//   entry: layernorm_bug_acc16
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with both sums accumulated in the 16-bit element type
#include "layernorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
layernorm_bug_acc16(const elem_t* __restrict__ x, const elem_t* __restrict__ w, const elem_t* __restrict__ b,
  elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  layernorm::two_pass<layernorm::kAcc16>(x, w, b, out, rows, cols, eps);
}
