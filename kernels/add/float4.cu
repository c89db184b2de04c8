// cudabench:
//   variant: float4
//   entry: add_float4
//   block: 256
//   grid: vec4
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per 16 bytes (4 floats, 8 halves), 16-byte loads and store, the tail one by one (seed 002 elementwise_add_float4)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
add_float4(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ out,
           long long n) {
  cb::map_vec4(a, b, out, n, cb::Add());
}
