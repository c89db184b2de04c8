// cudabench:
//   variant: vec4
//   entry: stream_write_vec4
//   block: BLOCK
//   grid: persistent
//   params:
//     BLOCK: [256, 128, 512, 1024]
//     UNROLL: [4, 1, 2, 8]          # 16-byte stores a thread an iteration
//     GRID_K: [0, 1, 2, 4, 8]
//   dtypes: [float32]
//   about: the write ceiling - 16-byte stores of zeros, UNROLL a thread an iteration, nothing read
#include "common/stream.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_write_vec4(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                  elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    cb::each_vector(vectors, [&](long long v) { cb::store16(out + v * cb::kPack, zero); });
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) { out[i] = cb::from_float<elem_t>(0.0f); });
}
