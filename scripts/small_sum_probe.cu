// Where does a hot 2^20 float sum spend its time? The kernels scripts/small_sum_probe.py
// times, each one piece of a one-pass sum (docs/performance.md, "fifth pass"): an empty
// kernel, the loads alone, the loads and the block partials, and the ways to finish the sum
// (the ticket as the catalogue's float4 takes it, a whole-block gather, a release add, float
// atomics, a collector spinning on a counter, (flag, partial) words polled, a cluster, two
// kernels), over two bodies: the catalogue's grid-stride vec4_sum and a fixed tile of
// BLOCK x ITEMS/4 vectors a block. Experiments, not catalogue kernels: several assume a
// 1-D float32 input that is a whole number of tiles, and the `*_partials` ones do not
// finish the sum at all.
#include <cooperative_groups.h>
#include "common/reduce.cuh"
namespace cg = cooperative_groups;
using namespace cb;

#ifndef GATHER
#define GATHER 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
k_ticket(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
         long long n, int chunks) {
  cb::reduce_rows<true>(x, out, partials, counters, 1, n, BLOCK, chunks);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
k_partials(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
           long long n, int chunks) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) partials[s.chunk] = v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
k_loads_only(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
             long long n, int chunks) {
  const Segment s = segment_of_block(chunks);
  const long long index = (long long)s.chunk * blockDim.x + threadIdx.x;
  const float v = vec4_sum<Sum>(x, n, index, (long long)chunks * blockDim.x);
  if (v == 1234.5f) partials[0] = v;  // keep the loads
}

extern "C" __global__ void __launch_bounds__(BLOCK)
k_empty(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
        long long n, int chunks) {
  if (n == 0) out[0] = 0.0f;
}

// the ticket, then the whole last block gathers the partials, all loads in flight
extern "C" __global__ void __launch_bounds__(BLOCK)
k_gather(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
         long long n, int chunks) {
  __shared__ float scratch[32];
  __shared__ bool is_last;
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) {
    partials[s.chunk] = v;
    is_last = take_last_ticket(&counters[0], chunks);
  }
  __syncthreads();
  if (!is_last) return;
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < chunks ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}

// the ticket with a release add; the last block takes an acquire fence
extern "C" __global__ void __launch_bounds__(BLOCK)
k_release(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
          long long n, int chunks) {
  __shared__ float scratch[32];
  __shared__ bool is_last;
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) {
    partials[s.chunk] = v;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(counters[0]);
    is_last = ticket.fetch_add(1u, cuda::memory_order_release) == (unsigned)chunks - 1;
    if (is_last) cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  }
  __syncthreads();
  if (!is_last) return;
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < chunks ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}

// non-deterministic float atomics (a floor for a one-pass sum; out not zeroed: timing only)
extern "C" __global__ void __launch_bounds__(BLOCK)
k_red(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
      long long n, int chunks) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) atomicAdd(out, v);
}

// clusters of CL blocks: partials meet in the leader's shared memory through DSMEM, one ticket a cluster
#ifndef CL
#define CL 8
#endif
extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(BLOCK)
k_cluster(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
          long long n, int chunks) {
  __shared__ float scratch[32];
  __shared__ float slots[CL];
  __shared__ bool is_last;
  cg::cluster_group cluster = cg::this_cluster();
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) {
    float* leader = cluster.map_shared_rank(slots, 0);
    leader[rank] = v;
  }
  cluster.sync();
  if (rank != 0) return;
  const int clusters = chunks / CL;
  if (threadIdx.x == 0) {
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < CL; ++i) a += slots[i];
    partials[s.chunk / CL] = a;
    is_last = take_last_ticket(&counters[0], clusters);
  }
  __syncthreads();
  if (!is_last) return;
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < clusters ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}

// the second of two kernels: one block adds the partials
extern "C" __global__ void __launch_bounds__(BLOCK)
k_final(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters,
        long long n, int chunks) {
  __shared__ float scratch[32];
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < chunks ? partials[i] : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) out[0] = acc;
}

// one block collects: the others publish their partial and add to a counter (release, result
// unused: a red, no wait); the collector spins on the counter, then gathers.
template <int kCollector, int kSleep>
__device__ __forceinline__ void collect(const float* __restrict__ x, float* __restrict__ out,
                                        float* partials, unsigned* counters, long long n, int chunks) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  const int collector = kCollector == 0 ? 0 : chunks - 1;
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> c(counters[0]);
  if ((int)blockIdx.x != collector) {
    if (threadIdx.x == 0) {
      partials[s.chunk] = v;
      c.fetch_add(1u, cuda::memory_order_release);
    }
    return;
  }
  if (threadIdx.x == 0) {
    while (c.load(cuda::memory_order_acquire) != (unsigned)chunks - 1)
      if (kSleep) __nanosleep(kSleep);
    c.store(0u, cuda::memory_order_relaxed);
  }
  __syncthreads();
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < chunks && i != collector ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = threadIdx.x == 0 ? v : 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) out[0] = acc;
}
extern "C" __global__ void __launch_bounds__(BLOCK)
k_collect_first(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  collect<0, 0>(x, out, partials, counters, n, chunks);
}
extern "C" __global__ void __launch_bounds__(BLOCK)
k_collect_last(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  collect<1, 0>(x, out, partials, counters, n, chunks);
}

// each block publishes (ready flag, partial) as one 64-bit word, no fence, no atomic; block 0
// (the first to start) polls every slot at once, kPollers threads, then sums them in a fixed order.
#ifndef GATHERW
#define GATHERW 8
#endif
template <int kPollers, int kSlots>
__device__ __forceinline__ void flag64(const float* __restrict__ x, float* __restrict__ out,
                                       float* partials, long long n, int chunks) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  unsigned long long* words = reinterpret_cast<unsigned long long*>(partials);
  if (blockIdx.x != 0) {
    if (threadIdx.x == 0) {
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> w(words[s.chunk]);
      w.store((1ull << 32) | __float_as_uint(v), cuda::memory_order_relaxed);
    }
    return;
  }
  if (kPollers == 32 && threadIdx.x >= 32) return;
  float val[kSlots];
  bool ready[kSlots];
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    const int i = threadIdx.x + k * kPollers;
    ready[k] = i >= chunks || i == 0;
    val[k] = i == 0 ? v : 0.0f;
  }
  for (;;) {
    bool all = true;
    unsigned long long got[kSlots];
#pragma unroll
    for (int k = 0; k < kSlots; ++k)
      got[k] = ready[k] ? 0ull : cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(
                                     words[threadIdx.x + k * kPollers]).load(cuda::memory_order_relaxed);
#pragma unroll
    for (int k = 0; k < kSlots; ++k)
      if (!ready[k]) {
        if (got[k] >> 32) { val[k] = __uint_as_float((unsigned)got[k]); ready[k] = true; }
        else all = false;
      }
    if (all) break;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    acc += val[k];
    const int i = threadIdx.x + k * kPollers;
    if (i < chunks && i != 0) words[i] = 0ull;
  }
  acc = kPollers == 32 ? warp_sum(acc) : block_sum(acc, scratch);
  if (threadIdx.x == 0) out[0] = acc;
}
extern "C" __global__ void __launch_bounds__(BLOCK)
k_flag_warp(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  flag64<32, GATHERW>(x, out, partials, n, chunks);
}

// the body over contiguous tiles: block b reads elements [b*BLOCK*ITEMS, (b+1)*BLOCK*ITEMS),
// thread t the vectors t, t + BLOCK, ... of it (n a multiple of the tile: experiment only)
#ifndef ITEMS
#define ITEMS 16
#endif
__device__ __forceinline__ float tile_sum(const float* __restrict__ x) {
  constexpr int V = ITEMS / 4;
  const float* tile = x + (long long)blockIdx.x * BLOCK * ITEMS;
  uint4 r[V];
#pragma unroll
  for (int k = 0; k < V; ++k)
    r[k] = load16_stream(tile + 4 * (threadIdx.x + k * BLOCK));
  float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int k = 0; k < V; ++k) {
    a[0] += __uint_as_float(r[k].x); a[1] += __uint_as_float(r[k].y);
    a[2] += __uint_as_float(r[k].z); a[3] += __uint_as_float(r[k].w);
  }
  return (a[0] + a[1]) + (a[2] + a[3]);
}
extern "C" __global__ void __launch_bounds__(BLOCK)
k_tile_partials(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  __shared__ float scratch[32];
  const float v = block_sum(tile_sum(x), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// grid-stride layout, fixed unrolled loads (isolates the layout from vec4_sum's loop)
__device__ __forceinline__ float strided_fixed_sum(const float* __restrict__ x) {
  constexpr int V = ITEMS / 4;
  const long long stride = (long long)gridDim.x * BLOCK;
  const long long i0 = (long long)blockIdx.x * BLOCK + threadIdx.x;
  uint4 r[V];
#pragma unroll
  for (int k = 0; k < V; ++k) r[k] = load16_stream(x + 4 * (i0 + k * stride));
  float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int k = 0; k < V; ++k) {
    a[0] += __uint_as_float(r[k].x); a[1] += __uint_as_float(r[k].y);
    a[2] += __uint_as_float(r[k].z); a[3] += __uint_as_float(r[k].w);
  }
  return (a[0] + a[1]) + (a[2] + a[3]);
}
extern "C" __global__ void __launch_bounds__(BLOCK)
k_strided_fixed_partials(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  __shared__ float scratch[32];
  const float v = block_sum(strided_fixed_sum(x), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}
// tile body, ticket, the last block gathers with all its threads
extern "C" __global__ void __launch_bounds__(BLOCK)
k_tile_gather(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  __shared__ float scratch[32];
  __shared__ bool is_last;
  const float v = block_sum(tile_sum(x), scratch);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    is_last = take_last_ticket(&counters[0], chunks);
  }
  __syncthreads();
  if (!is_last) return;
  float t[GATHER];
#pragma unroll
  for (int k = 0; k < GATHER; ++k) {
    const int i = threadIdx.x + k * BLOCK;
    t[k] = i < chunks ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHER; ++k) acc += t[k];
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}
// tile body, ticket taken by a whole warp's lane 0, the last block's first warp gathers
extern "C" __global__ void __launch_bounds__(BLOCK)
k_tile_gather_warp(const float* __restrict__ x, float* __restrict__ out, float* partials, unsigned* counters, long long n, int chunks) {
  __shared__ float scratch[32];
  const float v = block_sum(tile_sum(x), scratch);
  if (threadIdx.x >= 32) return;
  bool last = false;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    last = take_last_ticket(&counters[0], chunks);
  }
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  float t[GATHERW];
#pragma unroll
  for (int k = 0; k < GATHERW; ++k) {
    const int i = threadIdx.x + k * 32;
    t[k] = i < chunks ? __ldcg(&partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHERW; ++k) acc += t[k];
  acc = warp_sum(acc);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}
