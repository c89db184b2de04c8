// cudabench:
//   variant: float4
//   entry: sigmoid_float4
//   block: 256
//   grid: vec4
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per 16 bytes (4 floats, 8 halves), 16-byte loads and store, tail one by one (seed 002 sigmoid_float4)
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(256)
sigmoid_float4(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  cb::map_vec4(x, out, n, cb::Sigmoid());
}
