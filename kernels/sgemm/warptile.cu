// cudabench:
//   variant: warptile
//   entry: sgemm_warptile
//   block: BLOCK
//   grid: blocktile
//   requires: {max_K: 16777216}   # no split-K: one block walks K BK at a time (2^28 steps of 8 at 1x1x(2^31-1)); k0 + BK stays an int
//   params:                  # ops/sgemm.py's blocktile rule reads BM and BN
//     BM: [256, 64, 128]     # the block's tile of C: BM x BN
//     BN: [128, 64, 256]
//     BK: [8, 16, 32]        # K a stage of shared memory covers
//     WM: [64, 32, 128]      # a warp's tile of C: WM x WN
//     WN: [64, 32, 128]
//     TM: [4, 8]             # a thread's outputs per repeat: TM x TN
//     TN: [4, 8]
//     BLOCK: [256, 128, 512]
//     MIN_BLOCKS: [1, 2]     # __launch_bounds__' blocks an SM: 2 caps registers at 32768 / BLOCK
//   constraints:
//     - "BLOCK == (BM // WM) * (BN // WN) * 32"   # a warp per warp tile
//     - "BM % WM == 0 and BN % WN == 0"
//     - "WM % (4 * TM) == 0 and WN % (8 * TN) == 0"  # a warp's lanes as 4 x 8 over the warp tile
//     - "BM * BK % (4 * BLOCK) == 0 and BN * BK % (4 * BLOCK) == 0"  # whole float4 loads a thread
//     - "BK * (BM + BN) <= 6144"                  # two stages in 48 KB of static shared memory
//     - "WM * WN <= 4096"                         # at most 128 accumulators a thread
//   about: warp tiles, a thread's outputs repeated over its warp's tile, two shared-memory stages with the next tile's loads in flight during the math, float4 stores; tunable tiles (seed 002's next steps)
//
// tile128 stages a tile, waits, multiplies, waits: the loads of the next tile start only
// after the math. Here the next tile's global loads are issued into registers before the
// math on the current stage and stored to the other stage after it, so one barrier a step
// suffices and the load latency hides behind the FMAs. A warp owns a WM x WN tile of C; its
// 32 lanes form a 4 x 8 grid that repeats over the warp tile (WM / 4TM times down, WN / 8TN
// across), so a lane's shared-memory reads are float4s next to its neighbours' (B: 8 lanes
// read 8 consecutive float4s at TN = 4) or the same address (A: a broadcast). A is staged
// transposed (As[k][m]) so both operands are read along the tile. Blocks wholly inside C
// with K % BK == 0 and N % 4 == 0 take 16-byte loads and stores; edge blocks check every
// index, so any M, N, K is right. The defaults are `cudabench tune`'s best at 4096x4096x4096
// on an H100 (docs/performance.md): 256 x 128 block tiles of 64 x 64 warp tiles, 8 x 16
// outputs a thread, BK 8.
#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int kWarpsN = BN / WN;
constexpr int kIterM = WM / (4 * TM), kIterN = WN / (8 * TN);  // repeats of the lane grid
constexpr int kRowsT = kIterM * TM, kColsT = kIterN * TN;      // a thread's outputs
constexpr int kLoadsA = BM * BK / 4 / BLOCK, kLoadsB = BN * BK / 4 / BLOCK;
static_assert(BLOCK == (BM / WM) * (BN / WN) * 32, "BLOCK: a warp per WM x WN tile");
static_assert(BM % WM == 0 && BN % WN == 0, "BM, BN: whole warp tiles");
static_assert(WM % (4 * TM) == 0 && WN % (8 * TN) == 0, "WM, WN: whole 4 x 8 lane grids");
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "TM, TN, BK: float4 multiples");
static_assert(kLoadsA * 4 * BLOCK == BM * BK && kLoadsB * 4 * BLOCK == BN * BK,
              "BM x BK and BK x BN: whole float4 loads a thread");

struct Stage {
  float4 a[kLoadsA], b[kLoadsB];
};

// Four consecutive floats from p + g: one 16-byte load inside C's interior; at the edges
// each element checked (its row inside, its column under `limit`), zero outside.
template <bool kGuard>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, long long g, bool row_in,
                                        int col, int limit) {
  if (!kGuard) return __ldg(reinterpret_cast<const float4*>(p + g));
  return make_float4(row_in && col < limit ? p[g] : 0.f,
                     row_in && col + 1 < limit ? p[g + 1] : 0.f,
                     row_in && col + 2 < limit ? p[g + 2] : 0.f,
                     row_in && col + 3 < limit ? p[g + 3] : 0.f);
}

// The tile at k0 from global memory into registers. A: BM x BK, a float4 along K a load;
// B: BK x BN, a float4 along N.
template <bool kGuard>
__device__ __forceinline__ void load_stage(const float* __restrict__ A, const float* __restrict__ B,
                                           int M, int N, int K, int row0, int col0, int k0,
                                           Stage& s) {
#pragma unroll
  for (int i = 0; i < kLoadsA; ++i) {
    const int idx = threadIdx.x + i * BLOCK, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
    s.a[i] = load4<kGuard>(A, (long long)(row0 + r) * K + k0 + c, row0 + r < M, k0 + c, K);
  }
#pragma unroll
  for (int i = 0; i < kLoadsB; ++i) {
    const int idx = threadIdx.x + i * BLOCK, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
    s.b[i] = load4<kGuard>(B, (long long)(k0 + r) * N + col0 + c, k0 + r < K, col0 + c, N);
  }
}

__device__ __forceinline__ void store_stage(const Stage& s, float (*As)[BM], float (*Bs)[BN]) {
#pragma unroll
  for (int i = 0; i < kLoadsA; ++i) {
    const int idx = threadIdx.x + i * BLOCK, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
    As[c][r] = s.a[i].x;
    As[c + 1][r] = s.a[i].y;
    As[c + 2][r] = s.a[i].z;
    As[c + 3][r] = s.a[i].w;
  }
#pragma unroll
  for (int i = 0; i < kLoadsB; ++i) {
    const int idx = threadIdx.x + i * BLOCK, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
    *reinterpret_cast<float4*>(&Bs[r][c]) = s.b[i];
  }
}

template <bool kGuard>
__device__ __forceinline__ void warptile(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K,
                                         float (*As)[BK][BM], float (*Bs)[BK][BN]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / kWarpsN) * WM + (lane / 8) * TM;  // this lane's first row in the tile
  const int wn0 = (warp % kWarpsN) * WN + (lane % 8) * TN;  // and first column
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[kRowsT][kColsT] = {};
  Stage s;
  load_stage<kGuard>(A, B, M, N, K, row0, col0, 0, s);
  store_stage(s, As[0], Bs[0]);
  __syncthreads();
  int cur = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) load_stage<kGuard>(A, B, M, N, K, row0, col0, k0 + BK, s);  // in flight during the math
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float ra[kRowsT], rb[kColsT];
#pragma unroll
      for (int i = 0; i < kIterM; ++i)
#pragma unroll
        for (int t = 0; t < TM; t += 4)
          *reinterpret_cast<float4*>(&ra[i * TM + t]) =
              *reinterpret_cast<const float4*>(&As[cur][k][wm0 + i * 4 * TM + t]);
#pragma unroll
      for (int j = 0; j < kIterN; ++j)
#pragma unroll
        for (int t = 0; t < TN; t += 4)
          *reinterpret_cast<float4*>(&rb[j * TN + t]) =
              *reinterpret_cast<const float4*>(&Bs[cur][k][wn0 + j * 8 * TN + t]);
#pragma unroll
      for (int i = 0; i < kRowsT; ++i)
#pragma unroll
        for (int j = 0; j < kColsT; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
    }
    if (more) store_stage(s, As[cur ^ 1], Bs[cur ^ 1]);  // the other stage: nobody reads it now
    __syncthreads();
    cur ^= 1;
  }
#pragma unroll
  for (int i = 0; i < kRowsT; ++i) {
    const int row = row0 + wm0 + (i / TM) * 4 * TM + i % TM;
#pragma unroll
    for (int j = 0; j < kColsT; j += 4) {
      const int col = col0 + wn0 + (j / TN) * 8 * TN + j % TN;
      if (!kGuard) {
        *reinterpret_cast<float4*>(C + (long long)row * N + col) =
            make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
      } else if (row < M) {
#pragma unroll
        for (int t = 0; t < 4; ++t)
          if (col + t < N) C[(long long)row * N + col + t] = acc[i][j + t];
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
sgemm_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K) {
  // declared here, not in warptile: each of its two instantiations would get its own copy
  __shared__ __align__(16) float As[2][BK][BM];
  __shared__ __align__(16) float Bs[2][BK][BN];
  const bool inside = (K % BK == 0) && (N % 4 == 0) && (int)(blockIdx.y + 1) * BM <= M &&
                      (int)(blockIdx.x + 1) * BN <= N;
  if (inside) warptile<false>(A, B, C, M, N, K, As, Bs);
  else warptile<true>(A, B, C, M, N, K, As, Bs);
}
