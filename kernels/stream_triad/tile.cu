// cudabench:
//   variant: tile
//   entry: stream_triad_tile
//   block: BLOCK
//   grid: tiles
//   params:
//     BLOCK: [256, 128, 512]
//     UNROLL: [1, 2, 4, 8]          # 16-byte loads of each input in flight a thread
//     STREAM_LOADS: [0, 1]          # 1: ld.global.nc.L1::no_allocate (common/dtype.cuh)
//   dtypes: [float32]
//   about: the triad ceiling, a block per BLOCK x UNROLL vectors (no loop, a large grid); all loads of both inputs, then the FMAs and 16-byte stores
#include "common/stream.cuh"

__device__ __forceinline__ float triad(float a, float b) { return fmaf(3.0f, b, a); }

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_triad_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                  elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(a) && cb::is_aligned16(b) && cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
    cb::Vec<elem_t> x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) {
        x[u].raw = cb::load16_hinted(a + v * cb::kPack);
        y[u].raw = cb::load16_hinted(b + v * cb::kPack);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) {
#pragma unroll
        for (int e = 0; e < cb::kPack; ++e) x[u].set(e, triad(x[u].get(e), y[u].get(e)));
        cb::store16(out + v * cb::kPack, x[u].raw);
      }
    }
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) {
    out[i] = cb::from_float<elem_t>(triad(cb::to_float(a[i]), cb::to_float(b[i])));
  });
}
