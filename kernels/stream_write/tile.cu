// cudabench:
//   variant: tile
//   entry: stream_write_tile
//   block: BLOCK
//   grid: tiles
//   params:
//     BLOCK: [256, 128, 512]
//     UNROLL: [1, 2, 4, 8]          # 16-byte stores a thread, all of its work
//   dtypes: [float32]
//   about: the write ceiling, a block per BLOCK x UNROLL vectors (no loop, a large grid as cudaMemset launches); 16-byte stores of zero
#include "common/stream.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_write_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                  elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = cb::tile_vector(u);
      if (v < vectors) cb::store16(out + v * cb::kPack, make_uint4(0, 0, 0, 0));
    }
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) { out[i] = cb::from_float<elem_t>(0.0f); });
}
