// cudabench:
//   variant: naive
//   entry: sgemm_naive
//   block: 256
//   grid: tile16
//   requires: {max_K: 16777216}   # a thread walks all of K from global memory: 1x1x2^31 runs minutes (slow, not wrong)
//   about: a thread per element of C, K multiply-adds from global memory (seed 002 native)
extern "C" __global__ void __launch_bounds__(256)
sgemm_naive(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(long long)row * K + k] * B[(long long)k * N + col];
  C[(long long)row * N + col] = acc;
}
