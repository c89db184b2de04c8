// cudabench:
//   variant: cluster
//   entry: softmax_cluster
//   block: BLOCK
//   grid: row_cluster
//   params:
//     CLUSTER: [4, 2, 8]     # blocks a row: one thread-block cluster
//     BLOCK: [256, 128, 512]
//   constraints: ["BLOCK * CLUSTER >= 1024"]   # at most 8 packs a thread at 32768 columns
//   requires: {max_cols: 32768, cols_multiple_of: 8, min_sm: 90}
//   dtypes: [float32, float16, bfloat16]
//   about: block_reg's row in registers, split over a thread-block cluster of CLUSTER smaller blocks (sm_90) that swap their (max, sum) pairs through distributed shared memory - an SM holds blocks of several rows at once, each at its own step, and the last wave is a fraction of a row
//
// block_reg gives a row of 32768 floats one 1024-thread block, which takes half an SM's
// registers: an SM runs one row at a time, its loads stop while the block reduces, and 1728
// rows on 132 SMs end with a wave of 12 blocks. Here CLUSTER blocks of BLOCK threads share the
// row (block r of the cluster takes packs r, r + CLUSTER, ... of BLOCK each, so each block's
// loads stay contiguous). Each block reduces its part to an online (max, sum) pair, writes it
// to its shared memory, and after one cluster barrier every block reads the CLUSTER pairs
// straight from its peers' shared memory (DSMEM): one exchange, no global memory, no second
// kernel. A second barrier, split in an arrive after the reads and a wait before the block
// exits, keeps each block's shared memory alive until its peers have read it.
//
// Measured on an H200 (docs/performance.md): slower than block_reg at 1728x32768 (best CLUSTER
// 2 x BLOCK 512: 126.7 against 120.3 us; under ncu DRAM 70% against 78% with more warps
// resident), far slower on shorter rows. Kept as the DSMEM technique with its measured place.
#include "common/softmax.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define CB_CLUSTERS 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else  // clusters need sm_90: the file compiles for older targets, `min_sm` keeps it off them
#define CB_CLUSTERS 0
#define CLUSTER_DIMS
#endif

#ifndef CLUSTER
#define CLUSTER 4
#endif
#ifndef BLOCK
#define BLOCK 256
#endif

using cb::kPack;

#if CB_CLUSTERS
namespace cg = cooperative_groups;

template <int kPacks>
__device__ __forceinline__ void softmax_cluster_row(const elem_t* __restrict__ row,
                                                    elem_t* __restrict__ dst, long long cols,
                                                    float* scratch, float2* pair) {
  cg::cluster_group cluster = cg::this_cluster();
  const long long nv = cols / kPack;
  const long long first = (long long)cluster.block_rank() * BLOCK + threadIdx.x;
  constexpr long long kStride = (long long)CLUSTER * BLOCK;  // packs between a thread's packs
  cb::Vec<elem_t> v[kPacks];
  float m = -INFINITY;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = first + p * kStride;
    v[p].raw = j < nv ? cb::load16_stream(row + j * kPack) : make_uint4(0, 0, 0, 0);
    if (j < nv) m = fmaxf(m, cb::hreduce<cb::Max>(v[p]));
  }
  float s = 0.0f;
  if (m != -INFINITY) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p)
      if (first + p * kStride < nv) s += cb::pack_exp_sum(v[p], m);
  }
  const cb::MaxSum mine = cb::block_combine(cb::MaxSum{m, s}, scratch);
  if (threadIdx.x == 0) *pair = make_float2(mine.max, mine.sum);
  cluster.sync();  // every block's pair is in its shared memory
  cb::MaxSum all = cb::empty_max_sum();
#pragma unroll
  for (int r = 0; r < CLUSTER; ++r) {
    const float2 q = *cluster.map_shared_rank(pair, r);
    all = cb::combine(all, cb::MaxSum{q.x, q.y});
  }
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");  // done reading peers
  const float inv = 1.0f / all.sum;
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const long long j = first + p * kStride;
    if (j < nv) {
      cb::pack_normalize(v[p], all.max, inv);
      cb::store16_stream(dst + j * kPack, v[p].raw);
    }
  }
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");  // peers done reading ours
}
#endif

// (BLOCK, 1024 / BLOCK): 1024 threads' worth of blocks an SM at least, so at most 64 registers
// a thread, as block_reg's 1024-thread block has.
extern "C" __global__ void CLUSTER_DIMS __launch_bounds__(BLOCK, 1024 / BLOCK)
softmax_cluster(const elem_t* __restrict__ x, elem_t* __restrict__ out, float* partials,
                long long rows, long long cols, int chunks) {
#if CB_CLUSTERS
  __shared__ float scratch[64];
  __shared__ float2 pair;
  const long long r = blockIdx.x / CLUSTER;
  const elem_t* row = x + r * cols;
  elem_t* dst = out + r * cols;
  constexpr long long kStep = (long long)CLUSTER * BLOCK * kPack;  // one pack a thread
  if (cols <= kStep) softmax_cluster_row<1>(row, dst, cols, scratch, &pair);
  else if (cols <= 2 * kStep) softmax_cluster_row<2>(row, dst, cols, scratch, &pair);
  else if (cols <= 4 * kStep) softmax_cluster_row<4>(row, dst, cols, scratch, &pair);
  else softmax_cluster_row<8>(row, dst, cols, scratch, &pair);
#else
  __trap();
#endif
}
