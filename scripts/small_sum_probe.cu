// Where does a hot 2^20 float sum spend its time? The kernels scripts/small_sum_probe.py
// times, each one piece of a one-pass sum (docs/performance/reduce.md, "2^20, hot"): an empty
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
#define GATHER 4   // partials a thread of a gathering block reads
#endif
#ifndef GATHERW
#define GATHERW 8  // partials a lane of a gathering warp reads
#endif
#ifndef CL
#define CL 8       // blocks a cluster (k_cluster)
#endif
#ifndef ITEMS
#define ITEMS 16   // elements a thread (the fixed bodies)
#endif

#define PROBE_ARGS                                                                         \
  const float *__restrict__ x, float *__restrict__ out, float *partials, unsigned *counters, \
      long long n, int chunks

// ---------------------------------------------------------------- pieces

// This thread's share of partials[0, count): kSlots loads, kThreads threads apart, all in
// flight before any add (kL2: through L2, for partials written in this launch). `skip` is a
// slot the caller holds already.
template <int kThreads, int kSlots, bool kL2 = true>
__device__ __forceinline__ float gather(const float* partials, int count, int skip = -1) {
  float t[kSlots];
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    const int i = threadIdx.x + k * kThreads;
    t[k] = i < count && (skip < 0 || i != skip) ? (kL2 ? __ldcg(&partials[i]) : partials[i]) : 0.0f;
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) acc += t[k];
  return acc;
}

// The last block (every thread) adds partials[0, count), writes the sum, resets the ticket.
__device__ __forceinline__ void last_block_sums(const float* partials, int count, float* out,
                                                unsigned* counters, float* scratch) {
  const float acc = block_sum(gather<BLOCK, GATHER>(partials, count), scratch);
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}

// Thread 0 publishes v as partials[slot] and takes a ticket of `count`; true in every thread
// of the block that took the last one.
__device__ __forceinline__ bool publish_and_ticket(float v, int slot, int count, float* partials,
                                                   unsigned* counters) {
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[slot] = v;
    is_last = take_last_ticket(&counters[0], count);
  }
  __syncthreads();
  return is_last;
}

// The block's sum of the fixed bodies: ITEMS / 4 float4 loads a thread, all issued at once,
// no bounds (n a whole number of BLOCK x ITEMS tiles). Thread i of block b reads vectors
// first + k * step: a contiguous tile a block (step BLOCK) or the grid-stride order.
__device__ __forceinline__ float fixed_sum(const float* __restrict__ x, long long first,
                                           long long step) {
  constexpr int V = ITEMS / 4;
  Vec<float> r[V];
#pragma unroll
  for (int k = 0; k < V; ++k) r[k].raw = load16_stream(x + 4 * (first + k * step));
  float a[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int k = 0; k < V; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[e] += r[k].get(e);
  return (a[0] + a[1]) + (a[2] + a[3]);
}
__device__ __forceinline__ float tile_sum(const float* __restrict__ x) {
  return fixed_sum(x, (long long)blockIdx.x * BLOCK * (ITEMS / 4) + threadIdx.x, BLOCK);
}
__device__ __forceinline__ float strided_fixed_sum(const float* __restrict__ x) {
  return fixed_sum(x, (long long)blockIdx.x * BLOCK + threadIdx.x, (long long)gridDim.x * BLOCK);
}

// ---------------------------------------------------------------- the body alone

extern "C" __global__ void __launch_bounds__(BLOCK) k_empty(PROBE_ARGS) {
  if (n == 0) out[0] = 0.0f;
}

extern "C" __global__ void __launch_bounds__(BLOCK) k_loads_only(PROBE_ARGS) {
  const Segment s = segment_of_block(chunks);
  const long long index = (long long)s.chunk * blockDim.x + threadIdx.x;
  const float v = vec4_sum<Sum>(x, n, index, (long long)chunks * blockDim.x);
  if (v == 1234.5f) partials[0] = v;  // keep the loads
}

extern "C" __global__ void __launch_bounds__(BLOCK) k_partials(PROBE_ARGS) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) partials[s.chunk] = v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) k_tile_partials(PROBE_ARGS) {
  __shared__ float scratch[32];
  const float v = block_sum(tile_sum(x), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) k_strided_fixed_partials(PROBE_ARGS) {
  __shared__ float scratch[32];
  const float v = block_sum(strided_fixed_sum(x), scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// ---------------------------------------------------------------- ways to finish

// The catalogue's float4 (kernels/common/reduce.cuh): ticket, one warp adds the partials.
extern "C" __global__ void __launch_bounds__(BLOCK) k_ticket(PROBE_ARGS) {
  cb::reduce_rows<true>(x, out, partials, counters, 1, n, BLOCK, chunks);
}

// The ticket, then the whole last block gathers the partials, all loads in flight.
extern "C" __global__ void __launch_bounds__(BLOCK) k_gather(PROBE_ARGS) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (publish_and_ticket(v, s.chunk, chunks, partials, counters))
    last_block_sums(partials, chunks, out, counters, scratch);
}

// The ticket as a release add; the last block takes an acquire fence.
extern "C" __global__ void __launch_bounds__(BLOCK) k_release(PROBE_ARGS) {
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
  if (is_last) last_block_sums(partials, chunks, out, counters, scratch);
}

// Non-deterministic float atomics: a floor for a one-pass sum (out not zeroed: timing only).
extern "C" __global__ void __launch_bounds__(BLOCK) k_red(PROBE_ARGS) {
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  if (threadIdx.x == 0) atomicAdd(out, v);
}

// Clusters of CL blocks: partials meet in the leader's shared memory through DSMEM, one ticket
// a cluster.
extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(BLOCK)
k_cluster(PROBE_ARGS) {
  __shared__ float scratch[32];
  __shared__ float slots[CL];
  cg::cluster_group cluster = cg::this_cluster();
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) cluster.map_shared_rank(slots, 0)[rank] = v;
  cluster.sync();
  if (rank != 0) return;
  float a = 0.0f;  // thread 0 publishes it
  if (threadIdx.x == 0)
#pragma unroll
    for (int i = 0; i < CL; ++i) a += slots[i];
  const int clusters = chunks / CL;
  if (publish_and_ticket(a, s.chunk / CL, clusters, partials, counters))
    last_block_sums(partials, clusters, out, counters, scratch);
}

// The second of two kernels (CUB's shape): one block adds the partials.
extern "C" __global__ void __launch_bounds__(BLOCK) k_final(PROBE_ARGS) {
  __shared__ float scratch[32];
  const float acc = block_sum(gather<BLOCK, GATHER, false>(partials, chunks), scratch);
  if (threadIdx.x == 0) out[0] = acc;
}

// One block collects: the others publish their partial and add to a counter (release, result
// unused: a red, no wait); the collector spins on the counter, then gathers.
template <int kCollector>
__device__ __forceinline__ void collect(PROBE_ARGS) {
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
    while (c.load(cuda::memory_order_acquire) != (unsigned)chunks - 1) {
    }
    c.store(0u, cuda::memory_order_relaxed);
  }
  __syncthreads();
  const float own = threadIdx.x == 0 ? v : 0.0f;
  const float acc = block_sum(own + gather<BLOCK, GATHER>(partials, chunks, collector), scratch);
  if (threadIdx.x == 0) out[0] = acc;
}
extern "C" __global__ void __launch_bounds__(BLOCK) k_collect_first(PROBE_ARGS) {
  collect<0>(x, out, partials, counters, n, chunks);
}
extern "C" __global__ void __launch_bounds__(BLOCK) k_collect_last(PROBE_ARGS) {
  collect<1>(x, out, partials, counters, n, chunks);
}

// Each block publishes (ready flag, partial) as one 64-bit word, no fence, no atomic; block 0's
// first warp (block 0 starts first) polls every slot at once, then sums them in a fixed order
// and clears the words for the next launch.
extern "C" __global__ void __launch_bounds__(BLOCK) k_flag_warp(PROBE_ARGS) {
  using Word = cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>;
  __shared__ float scratch[32];
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<true>(x, n, s, chunks, scratch);
  unsigned long long* words = reinterpret_cast<unsigned long long*>(partials);
  if (blockIdx.x != 0) {
    if (threadIdx.x == 0)
      Word(words[s.chunk]).store((1ull << 32) | __float_as_uint(v), cuda::memory_order_relaxed);
    return;
  }
  if (threadIdx.x >= 32) return;
  float val[GATHERW];
  bool ready[GATHERW];
#pragma unroll
  for (int k = 0; k < GATHERW; ++k) {
    const int i = threadIdx.x + k * 32;
    ready[k] = i >= chunks || i == 0;
    val[k] = i == 0 ? v : 0.0f;
  }
  for (bool all = false; !all;) {
    all = true;
    unsigned long long got[GATHERW];
#pragma unroll
    for (int k = 0; k < GATHERW; ++k)
      got[k] = ready[k] ? 0ull : Word(words[threadIdx.x + k * 32]).load(cuda::memory_order_relaxed);
#pragma unroll
    for (int k = 0; k < GATHERW; ++k)
      if (!ready[k]) {
        if (got[k] >> 32) { val[k] = __uint_as_float((unsigned)got[k]); ready[k] = true; }
        else all = false;
      }
  }
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < GATHERW; ++k) {
    acc += val[k];
    const int i = threadIdx.x + k * 32;
    if (i < chunks && i != 0) words[i] = 0ull;
  }
  acc = warp_sum(acc);
  if (threadIdx.x == 0) out[0] = acc;
}

// The fixed tile body, the ticket, the last block gathers with all its threads.
extern "C" __global__ void __launch_bounds__(BLOCK) k_tile_gather(PROBE_ARGS) {
  __shared__ float scratch[32];
  const float v = block_sum(tile_sum(x), scratch);
  if (publish_and_ticket(v, blockIdx.x, chunks, partials, counters))
    last_block_sums(partials, chunks, out, counters, scratch);
}

// The fixed tile body, the ticket taken by warp 0's lane 0, the last block's first warp gathers.
extern "C" __global__ void __launch_bounds__(BLOCK) k_tile_gather_warp(PROBE_ARGS) {
  __shared__ float scratch[32];
  const float v = block_sum(tile_sum(x), scratch);
  if (threadIdx.x >= 32) return;
  bool last = false;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = v;
    last = take_last_ticket(&counters[0], chunks);
  }
  if (!__shfl_sync(0xffffffffu, last, 0)) return;
  const float acc = warp_sum(gather<32, GATHERW>(partials, chunks));
  if (threadIdx.x == 0) { out[0] = acc; counters[0] = 0; }
}
