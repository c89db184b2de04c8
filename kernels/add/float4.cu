// cudabench:
//   variant: float4
//   entry: add_float4
//   block: 256
//   grid: vec4
//   about: a thread per 4 elements, 16-byte loads and store, the n % 4 tail one by one (seed 002 elementwise_add_float4)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
add_float4(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
           long long n) {
  cb::map_vec4(a, b, out, n, cb::Add());
}
