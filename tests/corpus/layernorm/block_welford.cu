// cudabench:
//   variant: block_welford
//   entry: layernorm_welford
//   block: 256
//   grid: row
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, one pass, Welford per thread, Chan's combination over warps and the block (torch's way)
#include "layernorm.cuh"

extern "C" __global__ void __launch_bounds__(256)
layernorm_welford(const elem_t* __restrict__ x, const elem_t* __restrict__ w, const elem_t* __restrict__ b,
  elem_t* __restrict__ out, long long rows, long long cols, float eps) {
  layernorm::welford(x, w, b, out, rows, cols, eps);
}
