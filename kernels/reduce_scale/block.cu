// cudabench:
//   variant: block
//   entry: reduce_scale_block
//   block: 256
//   grid: row_block
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, max|x| by cub::BlockReduce, then a second pass divides (seed 000 ReduceScaleBlockKernel)
#include <cub/block/block_reduce.cuh>

#include "common/dtype.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_scale_block(elem_t* __restrict__ x, long long rows, long long cols) {
  using BlockReduce = cub::BlockReduce<float, 256>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float row_max;
  elem_t* row = x + (long long)blockIdx.x * cols;
  float m = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, fabsf(cb::to_float(row[c])));
  m = BlockReduce(temp).Reduce(m, [](float a, float b) { return fmaxf(a, b); });
  if (threadIdx.x == 0) row_max = m;
  __syncthreads();
  m = row_max;
  for (long long c = threadIdx.x; c < cols; c += 256) row[c] = cb::from_float<elem_t>(cb::to_float(row[c]) / m);
}
