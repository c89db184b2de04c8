// cudabench:
//   variant: block_reg
//   entry: softmax_block_reg
//   block: 1024
//   grid: row_block
//   requires: {max_cols: 32768, cols_multiple_of: 4}
//   about: a block of 1024 threads per row held in registers (up to 8 float4 a thread, 32768 floats a row), one read and one write, for rows too long for shared memory
//
// block_uncached reads a long row twice (the online max and sum, then the write pass);
// holding it in registers instead reads it once. 32768 floats over 1024 threads is 32 a
// thread: 8 float4, within the 64 registers a thread of a 1024-thread block may have.
#include "common/softmax.cuh"

template <int kPacks>
__device__ __forceinline__ void softmax_block_row(const float* __restrict__ row,
                                                  float* __restrict__ dst, long long cols,
                                                  float* scratch) {
  const float4* in = reinterpret_cast<const float4*>(row);
  float4* out = reinterpret_cast<float4*>(dst);
  const long long n4 = cols / 4;
  const float4 none = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
  float4 v[kPacks];
  float m = -INFINITY;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = threadIdx.x + 1024LL * p;
    v[p] = j < n4 ? cb::load_stream(in + j) : none;
    m = fmaxf(m, fmaxf(fmaxf(v[p].x, v[p].y), fmaxf(v[p].z, v[p].w)));
  }
  m = cb::block_reduce<cb::Max>(m, scratch);
  float s = 0.0f;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    v[p] = make_float4(__expf(v[p].x - m), __expf(v[p].y - m), __expf(v[p].z - m),
                       __expf(v[p].w - m));
    s += (v[p].x + v[p].y) + (v[p].z + v[p].w);
  }
  const float inv = 1.0f / cb::block_reduce<cb::Sum>(s, scratch);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = threadIdx.x + 1024LL * p;
    if (j < n4) __stcs(out + j, make_float4(v[p].x * inv, v[p].y * inv, v[p].z * inv, v[p].w * inv));
  }
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_block_reg(const float* __restrict__ x, float* __restrict__ out, float* partials,
                  long long rows, long long cols, int chunks) {
  __shared__ float scratch[32];
  const float* row = x + (long long)blockIdx.x * cols;
  float* dst = out + (long long)blockIdx.x * cols;
  if (cols <= 4096) softmax_block_row<1>(row, dst, cols, scratch);
  else if (cols <= 8192) softmax_block_row<2>(row, dst, cols, scratch);
  else if (cols <= 16384) softmax_block_row<4>(row, dst, cols, scratch);
  else softmax_block_row<8>(row, dst, cols, scratch);
}
