// Device-side building blocks for row reductions, shared by the reduce and reduce_max
// variants. Every piece takes the combining operation as a template argument (`Sum`, the
// default, or `Max`): an identity and a combine function.
//
// The row mapping (grid rule "segments", cudabench/ops/reduce.py) has two modes, told apart
// by the `group` argument:
//
// * group == 32, short rows (cols <= 1024): each warp reduces kWarpRows consecutive rows at
//   once, then moves on by the whole grid (the grid is at most one wave of resident blocks, so
//   no time goes to retiring and launching thousands of small blocks). Every lane keeps one
//   partial sum per row and issues its loads for all of them before adding, so kWarpRows
//   independent loads per lane are in flight: a warp per row alone leaves too few bytes in
//   flight to reach DRAM bandwidth with 128-float rows.
// * group == blockDim.x, long rows: a block reduces one *segment* of a row; a row has `chunks`
//   segments, enough to fill the GPU once when there are few rows (a 1-D reduction is one long
//   row). Each thread reads the row with a grid-stride loop, 4 loads in flight.
//
// Elements are `elem_t` (common/dtype.cuh: float, __half or __nv_bfloat16); every sum and max
// is taken in float, and the vector paths read 16 bytes a load (4 floats or 8 halves).
#pragma once

#include <cuda/atomic>

#include "common/dtype.cuh"

namespace cb {

// Tunable parameters (a variant's header `params:` passes them as -DNAME=value; these are
// the defaults for a variant that declares none). ops/reduce.py's grid rule reads the same
// names, so kernel and grid always agree.
//   BLOCK           threads per block (the launch bounds follow it)
//   WARP_ROW_BYTES  short rows: rows a warp takes at once, in bytes of one column: 16 is 4
//                   float32 rows or 8 16-bit rows, the same bytes in flight in every dtype
//                   (a 128-long 16-bit row is 16 packs: 4 rows would leave half the bytes
//                   a float32 warp has in flight)
//   LOADS           long rows: loads in flight per thread
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef WARP_ROW_BYTES
#define WARP_ROW_BYTES 16
#endif
#ifndef LOADS
#define LOADS 4
#endif

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpRows = WARP_ROW_BYTES / (int)sizeof(elem_t);
static_assert(kWarpRows >= 1 && kWarpRows <= 16 && (kWarpRows & (kWarpRows - 1)) == 0,
              "WARP_ROW_BYTES / sizeof(elem_t) must be a power of two from 1 to 16");
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps, at most 1024");

// The launch bounds of the variants that load rows as 16-byte packs: with 8 rows of packs in
// 16-bit, ptxas for sm_80, left to choose, capped such a kernel at 64 registers and spilled;
// stating 512 threads an SM (2 blocks of 256: up to 128 registers) removes the spill.
// float32 keeps the plain bound.
#if defined(CB_DTYPE_F16) || defined(CB_DTYPE_BF16)
#define CB_ROWS_BOUNDS __launch_bounds__(BLOCK, (512 / BLOCK) > 1 ? (512 / BLOCK) : 1)
#else
#define CB_ROWS_BOUNDS __launch_bounds__(BLOCK)
#endif

struct Sum {
  static __device__ __forceinline__ float identity() { return 0.0f; }
  static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};

// Max with -inf as the identity: right for all-negative rows and for rows holding -inf or
// +inf (seed 001 starts from FLT_MIN, the smallest *positive* float, which is wrong for them).
struct Max {
  static __device__ __forceinline__ float identity() { return -__int_as_float(0x7f800000); }
  static __device__ __forceinline__ float combine(float a, float b) { return fmaxf(a, b); }
};

// Combine over the warp with xor shuffles (a butterfly): every lane ends with the total.
template <class Op = Sum>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = Op::combine(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) { return warp_reduce<Sum>(v); }

// Combine over the whole block: each warp reduces, warp leaders meet in `scratch` (32 floats
// of shared memory), and every warp reduces those. Every thread ends with the total. All
// threads of the block must call it.
template <class Op = Sum>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_reduce<Op>(v);
  __syncthreads();  // a previous call may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_reduce<Op>(lane < warps ? scratch[lane] : Op::identity());
}
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  return block_reduce<Sum>(v, scratch);
}

// t[0] op t[1] op ... op t[kPack - 1], pairwise (a tree: independent operations).
template <class Op = Sum>
__device__ __forceinline__ float tree_reduce(float (&t)[kPack]) {
#pragma unroll
  for (int width = kPack / 2; width >= 1; width /= 2)
#pragma unroll
    for (int i = 0; i < width; ++i) t[i] = Op::combine(t[i], t[i + width]);
  return t[0];
}

// The kPack elements of a 16-byte vector combined.
template <class Op = Sum>
__device__ __forceinline__ float hreduce(const Vec<elem_t>& v) {
  float t[kPack];
#pragma unroll
  for (int i = 0; i < kPack; ++i) t[i] = v.get(i);
  return tree_reduce<Op>(t);
}

// ---------------------------------------------------------------- short rows, warp mode

// A warp's place in the grid-stride loop over groups of kWarpRows rows:
//   for (WarpRows w = first_warp_rows(); w.row0 < rows; next_warp_rows(w)) { ... }
struct WarpRows {
  long long row0;  // first of the warp's current kWarpRows rows
  long long step;  // rows all warps of the grid cover in one pass
  int lane;
};

__device__ __forceinline__ WarpRows first_warp_rows() {
  WarpRows w;
  w.row0 = (((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * kWarpRows;
  w.step = (long long)gridDim.x * (blockDim.x >> 5) * kWarpRows;
  w.lane = threadIdx.x & 31;
  return w;
}

__device__ __forceinline__ void next_warp_rows(WarpRows& w) { w.row0 += w.step; }

// Each lane's partials of rows row0 .. row0 + kWarpRows - 1 (rows past the end give the
// identity), plain 4-byte loads: lane l reads columns l, l + 32, ...
template <class Op = Sum>
__device__ __forceinline__ void warp_rows_sum(const elem_t* __restrict__ x, long long rows,
                                              long long cols, const WarpRows& w,
                                              float (&acc)[kWarpRows]) {
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) acc[r] = Op::identity();
  for (long long c = w.lane; c < cols; c += 32) {
    float v[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r)
      v[r] = w.row0 + r < rows ? to_float(x[(w.row0 + r) * cols + c]) : Op::identity();
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) acc[r] = Op::combine(acc[r], v[r]);
  }
}

// The same with 16-byte loads (kPack elements each). Needs every row to start on a 16-byte
// boundary (cols % kPack == 0 and x aligned); otherwise it reads plain elements, so any shape
// is correct.
template <class Op = Sum>
__device__ __forceinline__ void warp_rows_sum_vec4(const elem_t* __restrict__ x, long long rows,
                                                   long long cols, const WarpRows& w,
                                                   float (&acc)[kWarpRows]) {
  if ((cols % kPack) || (reinterpret_cast<unsigned long long>(x) & 15)) {
    warp_rows_sum<Op>(x, rows, cols, w, acc);
    return;
  }
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) acc[r] = Op::identity();
  const long long nv = cols / kPack;
  for (long long j = w.lane; j < nv; j += 32) {
    Vec<elem_t> v[kWarpRows];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r)
      v[r].raw = w.row0 + r < rows ? load16_stream(x + (w.row0 + r) * cols + j * kPack)
                                   : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r)
      if (w.row0 + r < rows) acc[r] = Op::combine(acc[r], hreduce<Op>(v[r]));
  }
}

// Sum each row's partials over the warp and return them spread over the lanes: lane l ends
// with the total of row row0 + l / kLanesPerRow. A reduce-scatter: at the first xor step
// (offset 16) the lower half-warp keeps rows 0 .. kWarpRows/2 - 1 and sends the others, the
// upper half the reverse, so each step halves the rows every lane carries. kWarpRows rows
// cost log2(kWarpRows) + log2(kLanesPerRow) = 5 + ... shuffles in all (6 for 4 rows), not
// 5 per row (20).
constexpr int kLanesPerRow = 32 / kWarpRows;
template <class Op = Sum>
__device__ __forceinline__ float warp_rows_total(const WarpRows& w, float (&acc)[kWarpRows]) {
#pragma unroll
  for (int half = kWarpRows / 2, offset = 16; half >= 1; half /= 2, offset /= 2) {
    const bool upper = w.lane & offset;
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float keep = upper ? acc[i + half] : acc[i];
      const float send = upper ? acc[i] : acc[i + half];
      acc[i] = Op::combine(keep, __shfl_xor_sync(kFullMask, send, offset));
    }
  }
  float total = acc[0];
#pragma unroll
  for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2)
    total = Op::combine(total, __shfl_xor_sync(kFullMask, total, offset));
  return total;
}

// Write the warp's row totals: the first lane of each row's lane group writes it.
template <class Op = Sum>
__device__ __forceinline__ void warp_rows_store(elem_t* __restrict__ out, long long rows,
                                                const WarpRows& w, float (&acc)[kWarpRows]) {
  const float total = warp_rows_total<Op>(w, acc);
  const long long row = w.row0 + w.lane / kLanesPerRow;
  if (w.lane % kLanesPerRow == 0 && row < rows) out[row] = from_float<elem_t>(total);
}

// Short-row mode, whole: every warp of the grid takes kWarpRows rows at a time, sums them
// (with 16-byte loads when kVec4 and the rows are 16-byte aligned) and stores the totals.
template <bool kVec4, class Op = Sum>
__device__ __forceinline__ void reduce_short_rows(const elem_t* __restrict__ x,
                                                  elem_t* __restrict__ out, long long rows,
                                                  long long cols) {
  for (WarpRows w = first_warp_rows(); w.row0 < rows; next_warp_rows(w)) {
    float acc[kWarpRows];
    if (kVec4) warp_rows_sum_vec4<Op>(x, rows, cols, w, acc);
    else warp_rows_sum<Op>(x, rows, cols, w, acc);
    warp_rows_store<Op>(out, rows, w, acc);
  }
}

// ---------------------------------------------------------------- long rows, block mode

struct Segment {
  long long row;  // the row this block reduces a segment of
  int chunk;      // which of the row's `chunks` segments
};

__device__ __forceinline__ Segment segment_of_block(int chunks) {
  Segment s;
  s.row = blockIdx.x / chunks;
  s.chunk = blockIdx.x % chunks;
  return s;
}

// Sum of p[begin], p[begin + stride], ... below `end`, kLoads loads in flight at a time: every
// round issues all its loads (the ones past `end` predicated off) before adding any, so the
// last, partial round costs one memory latency, not one per element.
constexpr int kLoads = LOADS;
static_assert(kLoads >= 1 && kLoads <= 16, "LOADS must be 1 to 16");
template <class Op = Sum>
__device__ __forceinline__ float strided_sum(const elem_t* __restrict__ p, long long begin,
                                             long long end, long long stride) {
  float a = Op::identity();
  for (long long i = begin; i < end; i += kLoads * stride) {
    float v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      v[k] = i + k * stride < end ? to_float(p[i + k * stride]) : Op::identity();
#pragma unroll
    for (int k = 0; k < kLoads; ++k) a = Op::combine(a, v[k]);
  }
  return a;
}

// This thread's share of the sum of p[0, n) read as 16-byte loads (kPack elements each),
// kLoads of them in flight at a time. `index` and `stride` count vectors among all threads
// of the row. A row need not start on a 16-byte boundary: up to kPack - 1 elements before the
// first boundary (the head) and after the last whole vector (the tail) are read one by one by
// the row's first threads. Nothing past p[n - 1] is ever read (seed 002's reduce_v4 reads a
// float4 wherever idx < N).
template <class Op = Sum>
__device__ __forceinline__ float vec4_sum(const elem_t* __restrict__ p, long long n,
                                          long long index, long long stride) {
  const int misalign = (int)((reinterpret_cast<unsigned long long>(p) / sizeof(elem_t)) % kPack);
  const long long head = misalign ? (kPack - misalign < n ? kPack - misalign : n) : 0;
  const elem_t* __restrict__ body = p + head;
  const long long nv = (n - head) / kPack;
  const long long tail = head + kPack * nv;
  float a[kPack];
#pragma unroll
  for (int e = 0; e < kPack; ++e) a[e] = Op::identity();
  for (long long i = index; i < nv; i += kLoads * stride) {  // as strided_sum, in vectors
    Vec<elem_t> v[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      v[k].raw = i + k * stride < nv ? load16_stream(body + (i + k * stride) * kPack)
                                     : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < kLoads; ++k)
      if (i + k * stride < nv)
#pragma unroll
        for (int e = 0; e < kPack; ++e) a[e] = Op::combine(a[e], v[k].get(e));
  }
  float acc = tree_reduce<Op>(a);
  if (index < head) acc = Op::combine(acc, to_float(p[index]));
  if (index < n - tail) acc = Op::combine(acc, to_float(p[tail + index]));
  return acc;
}

// Long-row mode, a block's part: its segment of row s.row reduced over the block (every
// thread ends with it): 16-byte streaming loads (kVec4) or plain strided ones.
template <bool kVec4, class Op = Sum>
__device__ __forceinline__ float segment_reduce(const elem_t* __restrict__ x, long long cols,
                                                const Segment& s, int chunks, float* scratch) {
  const elem_t* row = x + s.row * cols;
  const long long index = (long long)s.chunk * blockDim.x + threadIdx.x;
  const long long stride = (long long)chunks * blockDim.x;
  const float v = kVec4 ? vec4_sum<Op>(row, cols, index, stride)
                        : strided_sum<Op>(row, index, cols, stride);
  return block_reduce<Op>(v, scratch);
}

// The ticket of a split row: every block of the row takes one after publishing its partial;
// the block that takes the last (chunks - 1) finishes the row. acq_rel: the partial written
// before the ticket (release) is visible to the block that takes the last one (acquire).
__device__ __forceinline__ bool take_last_ticket(unsigned* counter, int chunks) {
  cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(*counter);
  return ticket.fetch_add(1u, cuda::memory_order_acq_rel) == (unsigned)chunks - 1;
}

// Finish the row after the block's sum `v` (valid in thread 0 at least).
// chunks == 1: thread 0 writes out[row]. chunks > 1: each block leaves its partial in
// `partials`; the last block to finish the row adds the partials in a fixed order (so the
// result is the same run after run), writes out[row] and resets the counter for the next
// launch (threadFenceReduction in the CUDA samples). One launch, no second kernel, no memset.
// `counters` must be zero before the first launch.
template <class Op = Sum>
__device__ __forceinline__ void finish_row(float v, const Segment& s, int chunks,
                                           elem_t* __restrict__ out, float* partials,
                                           unsigned* counters) {
  if (chunks == 1) {
    if (threadIdx.x == 0) out[s.row] = from_float<elem_t>(v);
    return;
  }
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
    partials[s.row * chunks + s.chunk] = v;
    is_last = take_last_ticket(&counters[s.row], chunks);
  }
  __syncthreads();
  if (!is_last || threadIdx.x >= 32) return;  // one warp adds the partials
  float acc = Op::identity();
  for (int i = threadIdx.x; i < chunks; i += 32)
    acc = Op::combine(acc, __ldcg(&partials[s.row * chunks + i]));
  acc = warp_reduce<Op>(acc);
  if (threadIdx.x == 0) {
    out[s.row] = from_float<elem_t>(acc);
    counters[s.row] = 0;
  }
}

// A whole row reduction, both modes: short rows a warp per kWarpRows rows, long rows a block
// per segment with the last block of a split row combining the partials. The float4 and
// shuffle variants of reduce and reduce_max are this with their loads (kVec4) and their Op.
template <bool kVec4, class Op = Sum>
__device__ __forceinline__ void reduce_rows(const elem_t* __restrict__ x, elem_t* __restrict__ out,
                                            float* partials, unsigned* counters, long long rows,
                                            long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  if (group == 32) {
    reduce_short_rows<kVec4, Op>(x, out, rows, cols);
    return;
  }
  const Segment s = segment_of_block(chunks);
  const float v = segment_reduce<kVec4, Op>(x, cols, s, chunks, scratch);
  finish_row<Op>(v, s, chunks, out, partials, counters);
}

}  // namespace cb
