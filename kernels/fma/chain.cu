// cudabench:
//   variant: chain
//   entry: fma_chain
//   block: BLOCK
//   grid: elements
//   params:
//     BLOCK: [256, 128, 512, 1024]
//   dtypes: [float32]
//   about: the fp32 FMA ceiling - each thread runs `iters` dependent FMAs in registers (x = x * one + step, with one = 1 passed at run time so they stay FMAs), one load and one store
#include "common/warp.cuh"  // thread_index

#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
fma_chain(const float* __restrict__ x, float* __restrict__ out, long long n, int iters,
          float one, float step) {
  const long long i = cb::thread_index();
  if (i >= n) return;
  float v = x[i];
#pragma unroll 16
  for (int k = 0; k < iters; ++k) v = fmaf(v, one, step);
  out[i] = v;
}
