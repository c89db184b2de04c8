// cudabench:
//   variant: bug_n1_cu
//   entry: row_var_bug_n1_cu
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: planted - block dividing by n - 1 (the sample variance)
#include "row_var.cuh"

extern "C" __global__ void __launch_bounds__(256)
row_var_bug_n1_cu(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows, long long cols) {
  row_var::row<row_var::kN1>(x, out, rows, cols);
}
