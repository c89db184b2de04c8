// Device-side building blocks for row reductions, shared by every reduce variant.
//
// The row mapping (grid rule "segments", cudabench/ops/reduce.py): the input holds `rows`
// rows of `cols` floats. A *group* of threads -- one warp, or the whole block -- reduces one
// *segment* of a row, and a row has `chunks` segments. Short rows (cols <= 1024) get one warp
// each and chunks == 1; long rows get whole blocks, and as many blocks per row as it takes to
// fill the GPU once (a 1-D reduction is one long row). So chunks > 1 only when the group is
// the whole block.
#pragma once

namespace cb {

constexpr unsigned kFullMask = 0xffffffffu;

// Where this thread works: the row and segment of its group, and its place in the group.
struct Segment {
  long long row;  // the row its group reduces
  int chunk;      // which of the row's `chunks` segments
  int lane;       // thread index inside the group
  bool valid;     // false for warps past the last row (in the grid's last block)
};

__device__ __forceinline__ Segment segment_of_thread(long long rows, int group, int chunks) {
  const int groups_per_block = blockDim.x / group;
  const long long gid = (long long)blockIdx.x * groups_per_block + threadIdx.x / group;
  Segment s;
  s.row = gid / chunks;
  s.chunk = (int)(gid % chunks);
  s.lane = threadIdx.x % group;
  s.valid = s.row < rows;
  return s;
}

// Barrier for one group: a warp needs only __syncwarp; a block needs __syncthreads.
__device__ __forceinline__ void group_sync(int group) {
  if (group == 32) __syncwarp(); else __syncthreads();
}

// Sum over the warp with xor shuffles (a butterfly): every lane ends with the total.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Sum over the whole block: each warp sums, warp leaders meet in `scratch` (32 floats of
// shared memory), and every warp sums those. Every thread ends with the total. All threads of
// the block must call it.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // a previous call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_sum(lane < warps ? scratch[lane] : 0.0f);
}

// Sum over the group with shuffles: a warp, or the whole block.
__device__ __forceinline__ float group_sum(float v, int group, float* scratch) {
  return group == 32 ? warp_sum(v) : block_sum(v, scratch);
}

// Sum of p[begin], p[begin + stride], ... below `end`, four loads in flight at a time.
__device__ __forceinline__ float strided_sum(const float* __restrict__ p, long long begin,
                                             long long end, long long stride) {
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  long long i = begin;
  for (; i + 3 * stride < end; i += 4 * stride) {
    a0 += p[i];
    a1 += p[i + stride];
    a2 += p[i + 2 * stride];
    a3 += p[i + 3 * stride];
  }
  for (; i < end; i += stride) a0 += p[i];
  return (a0 + a1) + (a2 + a3);
}

__device__ __forceinline__ float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// This thread's share of the sum of p[0, n) read as 16-byte float4 loads. `index` and
// `stride` count float4s among all threads of the row. A row need not start on a 16-byte
// boundary (cols % 4 != 0): up to 3 elements before the first boundary (the head) and up to 3
// after the last whole float4 (the tail) are read as plain floats by the row's first threads.
// Nothing past p[n - 1] is ever read.
__device__ __forceinline__ float vec4_sum(const float* __restrict__ p, long long n,
                                          long long index, long long stride) {
  const int misalign = (int)((reinterpret_cast<unsigned long long>(p) >> 2) & 3);
  const long long head = misalign ? (4 - misalign < n ? 4 - misalign : n) : 0;
  const float4* __restrict__ body = reinterpret_cast<const float4*>(p + head);
  const long long n4 = (n - head) / 4;
  const long long tail = head + 4 * n4;
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  long long i = index;
  for (; i + 3 * stride < n4; i += 4 * stride) {  // four 16-byte loads in flight, then add
    const float4 u = body[i], v = body[i + stride], w = body[i + 2 * stride],
                 z = body[i + 3 * stride];
    a.x += (u.x + v.x) + (w.x + z.x);
    a.y += (u.y + v.y) + (w.y + z.y);
    a.z += (u.z + v.z) + (w.z + z.z);
    a.w += (u.w + v.w) + (w.w + z.w);
  }
  for (; i < n4; i += stride) {
    const float4 u = body[i];
    a.x += u.x; a.y += u.y; a.z += u.z; a.w += u.w;
  }
  float acc = hsum(a);
  if (index < head) acc += p[index];
  if (index < n - tail) acc += p[tail + index];
  return acc;
}

// Finish the row after the group's sum `v` (valid in the group's lane 0 at least).
// chunks == 1: lane 0 writes out[row]. chunks > 1 (the group is the whole block): each block
// leaves its partial in `partials`; the last block to finish the row -- told by an atomic
// ticket in counters[row] -- adds the partials in a fixed order, writes out[row] and resets
// the counter for the next launch (threadFenceReduction in the CUDA samples). One launch,
// no second kernel, no memset. `counters` must be zero before the first launch.
__device__ __forceinline__ void finish_row(float v, const Segment& s, int chunks,
                                           float* __restrict__ out, float* partials,
                                           unsigned* counters, float* scratch) {
  if (chunks == 1) {
    if (s.lane == 0) out[s.row] = v;
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[s.row * chunks + s.chunk] = v;
    __threadfence();  // the partial is visible GPU-wide before the ticket is taken
    is_last = atomicAdd(&counters[s.row], 1u) == (unsigned)chunks - 1;
  }
  __syncthreads();
  if (!is_last) return;
  float acc = 0.0f;
  for (int i = threadIdx.x; i < chunks; i += blockDim.x)
    acc += __ldcg(&partials[s.row * chunks + i]);  // from L2: other SMs wrote them
  acc = block_sum(acc, scratch);
  if (threadIdx.x == 0) {
    out[s.row] = acc;
    counters[s.row] = 0;
  }
}

}  // namespace cb
