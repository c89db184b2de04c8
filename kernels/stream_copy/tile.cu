// cudabench:
//   variant: tile
//   entry: stream_copy_tile
//   block: BLOCK
//   grid: tiles
//   params:
//     BLOCK: [256, 128, 512]
//     UNROLL: [1, 2, 4, 8]          # 16-byte loads in flight a thread, all of its work
//     STREAM_LOADS: [0, 1]          # 1: ld.global.nc.L1::no_allocate (common/dtype.cuh)
//   dtypes: [float32]
//   about: the copy ceiling, a block per BLOCK x UNROLL vectors (no loop, a large grid as library copies launch); all loads, then 16-byte stores
#include "common/stream.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_copy_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                 elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(a) && cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
    uint4 x[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) x[u] = cb::load16_hinted(a + v * cb::kPack);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) cb::store16(out + v * cb::kPack, x[u]);
    }
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) { out[i] = a[i]; });
}
