// cudabench:
//   variant: bug_k_tail_cu
//   entry: matmul_bug_k_tail_cu
//   block: 256
//   grid: tiles
//   dtypes: [float32, float16, bfloat16]
//   about: planted - tiled without the K % 32 remainder
#include "matmul.cuh"

extern "C" __global__ void __launch_bounds__(256)
matmul_bug_k_tail_cu(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, long long M,
  long long N, long long K) {
  matmul::tiled<matmul::kKTail>(A, B, C, M, N, K);
}
