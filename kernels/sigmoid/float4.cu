// cudabench:
//   variant: float4
//   entry: sigmoid_float4
//   block: 256
//   grid: vec4
//   about: a thread per 4 elements, 16-byte loads and store, tail one by one (seed 002 sigmoid_float4)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
sigmoid_float4(const float* __restrict__ x, float* __restrict__ out, long long n) {
  cb::map_vec4(x, out, n, cb::Sigmoid());
}
