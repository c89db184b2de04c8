// cudabench:
//   variant: tiled
//   entry: matmul_tiled
//   block: 256
//   grid: tiles
//   dtypes: [float32, float16, bfloat16]
//   about: 32 x 32 tiles of C through shared memory, 4 outputs a thread, K in steps of 32, FMAs in float32
#include "matmul.cuh"

extern "C" __global__ void __launch_bounds__(256)
matmul_tiled(const elem_t* __restrict__ A, const elem_t* __restrict__ B, elem_t* __restrict__ C, long long M,
  long long N, long long K) {
  matmul::tiled<matmul::kNone>(A, B, C, M, N, K);
}
