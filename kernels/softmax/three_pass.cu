// cudabench:
//   variant: three_pass
//   launches:
//     - {entry: softmax_1d_max, block: 256, grid: split}
//     - {entry: softmax_1d_sum, block: 256, grid: split}
//     - {entry: softmax_1d_norm, block: 256, grid: split}
//   requires: {max_rows: 1}
//   dtypes: [float32, float16, bfloat16]
//   about: 1-D, three kernels (max, sum of exp, normalize), block partials in a workspace, each kernel re-reduces the partials it needs (seeds 001 and 002)
//
// The seeds chain max -> sum -> normalize through single device scalars updated by atomics.
// Here each block leaves its partial in `partials` (max at [b], sum at [chunks + b]) and the
// next kernel's blocks each reduce those few hundred values again: no atomics, no memset, and
// the same result every run.
#include "common/softmax.cuh"

// The blocks' partials p[first, first + chunks) combined by the whole block (read through
// L2: another kernel wrote them).
template <class Op>
__device__ __forceinline__ float partials_reduce(const float* p, int first, int chunks,
                                                 float* scratch) {
  float v = Op::identity();
  for (int i = threadIdx.x; i < chunks; i += blockDim.x)
    v = Op::combine(v, __ldcg(&p[first + i]));
  return cb::block_reduce<Op>(v, scratch);
}

extern "C" __global__ void __launch_bounds__(256)
softmax_1d_max(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
               long long rows, long long cols, int chunks) {
  __shared__ float scratch[32];
  float m = cb::strided_sum<cb::Max>(x, cb::split_index(), cols, (long long)chunks * blockDim.x);
  m = cb::block_reduce<cb::Max>(m, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

extern "C" __global__ void __launch_bounds__(256)
softmax_1d_sum(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
               long long rows, long long cols, int chunks) {
  __shared__ float scratch[32];
  const float m = partials_reduce<cb::Max>(partials, 0, chunks, scratch);
  float s = 0.0f;
  for (long long i = cb::split_index(); i < cols; i += (long long)chunks * blockDim.x)
    s += __expf(cb::to_float(x[i]) - m);
  s = cb::block_reduce<cb::Sum>(s, scratch);
  if (threadIdx.x == 0) partials[chunks + blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(256)
softmax_1d_norm(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                long long rows, long long cols, int chunks) {
  __shared__ float scratch[32];
  const float m = partials_reduce<cb::Max>(partials, 0, chunks, scratch);
  const float inv = 1.0f / partials_reduce<cb::Sum>(partials, chunks, chunks, scratch);
  for (long long i = cb::split_index(); i < cols; i += (long long)chunks * blockDim.x)
    out[i] = cb::from_float<elem_t>(__expf(cb::to_float(x[i]) - m) * inv);
}
