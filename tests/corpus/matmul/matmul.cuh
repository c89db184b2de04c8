// matmul's CUDA variants: C = A @ B (A: M x K, B: K x N, row-major), 32 x 32 tiles of C through
// shared memory, blocks of 32 x 8 threads (the `tiles` rule), each thread 4 outputs, K in steps
// of 32 accumulated by FMAs in float32; the planted faults change one template argument.
#pragma once

#include "../rows.cuh"

namespace matmul {

enum Fault {
  kNone,
  kKTail,  // K in whole steps of 32 only: the K % 32 remainder is never added
  kAcc16,  // the accumulator rounded to the element type after every step of 32
};

constexpr int kTile = 32, kPerThread = 4;  // blockDim (32, 8): 8 x 4 = 32 rows of the tile

template <int F>
__device__ __forceinline__ void tiled(const elem_t* __restrict__ A, const elem_t* __restrict__ B,
                                      elem_t* __restrict__ C, long long M, long long N, long long K) {
  __shared__ float As[kTile][kTile + 1];
  __shared__ float Bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long row0 = (long long)blockIdx.y * kTile, col0 = (long long)blockIdx.x * kTile;
  const long long k_end = F == kKTail ? K - K % kTile : K;
  float acc[kPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (long long k0 = 0; k0 < k_end; k0 += kTile) {  // the same trip count in every thread
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int r = ty + 8 * i;
      const long long am = row0 + r, ak = k0 + tx, bk = k0 + r, bn = col0 + tx;
      As[r][tx] = am < M && ak < k_end ? corpus::load(A, am * K + ak) : 0.0f;
      Bs[r][tx] = bk < k_end && bn < N ? corpus::load(B, bk * N + bn) : 0.0f;
    }
    __syncthreads();
    float part[kPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 8
    for (int kk = 0; kk < kTile; ++kk) {
      const float b = Bs[kk][tx];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        if (F == kAcc16) part[i] = fmaf(As[ty + 8 * i][kk], b, part[i]);
        else acc[i] = fmaf(As[ty + 8 * i][kk], b, acc[i]);
      }
    }
    if (F == kAcc16) {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) acc[i] = corpus::round16(acc[i] + part[i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const long long m = row0 + ty + 8 * i, n = col0 + tx;
    if (m < M && n < N) corpus::store(C, m * N + n, acc[i]);
  }
}

}  // namespace matmul
