// cudabench:
//   variant: vec4
//   entry: stream_copy_vec4
//   block: BLOCK
//   grid: persistent
//   params:
//     BLOCK: [256, 128, 512, 1024]
//     UNROLL: [4, 1, 2, 8]          # 16-byte loads in flight a thread
//     GRID_K: [0, 1, 2, 4, 8]
//   dtypes: [float32]
//   about: the copy ceiling (read + write) - streaming 16-byte loads, UNROLL in flight, 16-byte stores
#include "common/stream.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_copy_vec4(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                 elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(a) && cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
    cb::each_vector(vectors, [&](long long v) {
      cb::store16(out + v * cb::kPack, cb::load16_stream(a + v * cb::kPack));
    });
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) { out[i] = a[i]; });
}
