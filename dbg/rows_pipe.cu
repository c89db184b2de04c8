#include "common/reduce.cuh"
// experiment: persistent warp-rows with the next group's loads issued before this group's reduce
extern "C" __global__ void __launch_bounds__(256)
rows_pipe(const float* __restrict__ x, float* __restrict__ out, float* partials,
          unsigned* counters, long long rows, long long cols, int group, int chunks) {
  cb::WarpRows w = cb::first_warp_rows();
  const long long n4 = cols / 4;  // assumes cols % 4 == 0 and cols <= 128
  float4 cur[cb::kWarpRows], nxt[cb::kWarpRows];
  const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
  for (int r = 0; r < cb::kWarpRows; ++r)
    cur[r] = (w.row0 + r < rows && w.lane < n4) ? reinterpret_cast<const float4*>(x + (w.row0 + r) * cols)[w.lane] : zero;
  while (w.row0 < rows) {
    const long long next = w.row0 + w.step;
#pragma unroll
    for (int r = 0; r < cb::kWarpRows; ++r)
      nxt[r] = (next + r < rows && w.lane < n4) ? reinterpret_cast<const float4*>(x + (next + r) * cols)[w.lane] : zero;
    float acc[cb::kWarpRows];
#pragma unroll
    for (int r = 0; r < cb::kWarpRows; ++r) { acc[r] = cb::hsum(cur[r]); cur[r] = nxt[r]; }
    cb::warp_rows_store(out, rows, w, acc);
    w.row0 = next;
  }
}
// experiment: 1-D even share - block b sums a contiguous range of float4s
extern "C" __global__ void __launch_bounds__(256)
even_share(const float* __restrict__ x, float* __restrict__ out, float* partials,
           unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  const cb::Segment s = cb::segment_of_block(chunks);
  const long long n4 = cols / 4;  // assumes cols % 4 == 0
  const long long per = (n4 + chunks - 1) / chunks;
  const long long begin = s.chunk * per, end = begin + per < n4 ? begin + per : n4;
  const float4* body = reinterpret_cast<const float4*>(x);
  float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
  for (long long i = begin + threadIdx.x; i < end; i += cb::kLoads * blockDim.x) {
    float4 v[cb::kLoads];
#pragma unroll
    for (int k = 0; k < cb::kLoads; ++k) v[k] = i + k * blockDim.x < end ? body[i + k * blockDim.x] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int k = 0; k < cb::kLoads; ++k) { a.x += v[k].x; a.y += v[k].y; a.z += v[k].z; a.w += v[k].w; }
  }
  float v = cb::block_sum(cb::hsum(a), scratch);
  if (threadIdx.x != 0) return;
  atomicAdd(&partials[s.row], v);
  if (cb::take_last_ticket(&counters[s.row], chunks)) { out[s.row] = atomicExch(&partials[s.row], 0.0f); counters[s.row] = 0; }
}
