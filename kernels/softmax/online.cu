// cudabench:
//   variant: online
//   launches:
//     - {entry: softmax_1d_online_stats, block: 256, grid: split}
//     - {entry: softmax_1d_online_norm, block: 256, grid: split}
//   requires: {max_rows: 1}
//   dtypes: [float32, float16, bfloat16]
//   about: 1-D, two kernels, the first computes max and sum in one pass (online softmax, rescaling the sum when the max grows), the second normalizes; two reads and one write
#include "common/softmax.cuh"

extern "C" __global__ void __launch_bounds__(256)
softmax_1d_online_stats(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                        long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  cb::MaxSum acc = cb::empty_max_sum();
  const long long stride = (long long)chunks * blockDim.x;
  for (long long i = cb::split_index(); i < cols; i += 4 * stride) {
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = i + k * stride < cols ? cb::to_float(x[i + k * stride]) : -INFINITY;
#pragma unroll
    for (int k = 0; k < 4; ++k) if (v[k] != -INFINITY) acc = cb::push(acc, v[k]);
  }
  acc = cb::block_combine(acc, scratch);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = acc.max;
    partials[2 * blockIdx.x + 1] = acc.sum;
  }
}

extern "C" __global__ void __launch_bounds__(256)
softmax_1d_online_norm(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                       long long rows, long long cols, int chunks) {
  __shared__ float scratch[64];
  const cb::MaxSum acc = cb::combine_partials(partials, chunks, scratch);
  const float m = acc.max, inv = 1.0f / acc.sum;
  for (long long i = cb::split_index(); i < cols; i += (long long)chunks * blockDim.x)
    out[i] = cb::from_float<elem_t>(__expf(cb::to_float(x[i]) - m) * inv);
}
