// cudabench:
//   variant: bug_acc16_cu
//   entry: matmul_bug_acc16_cu
//   block: 256
//   grid: tiles
//   dtypes: [float16, bfloat16]
//   about: planted - tiled with the accumulator rounded to the 16-bit element type after every step of 32
#include "matmul.cuh"

extern "C" __global__ void __launch_bounds__(256)
matmul_bug_acc16_cu(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, long long M,
  long long N, long long K) {
  matmul::tiled<matmul::kAcc16>(A, B, C, M, N, K);
}
