// cudabench:
//   variant: bug_acc16_cu
//   entry: logsumexp_bug_acc16_cu
//   block: 256
//   grid: row
//   dtypes: [float16, bfloat16]
//   about: planted - block with the sum of exps accumulated in the 16-bit element type
#include "logsumexp.cuh"

extern "C" __global__ void __launch_bounds__(256)
logsumexp_bug_acc16_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  logsumexp::row<logsumexp::kAcc16>(x, out, rows, cols);
}
