// cudabench:
//   variant: vec4
//   entry: stream_triad_vec4
//   block: BLOCK
//   grid: persistent
//   params:
//     BLOCK: [256, 128, 512, 1024]
//     UNROLL: [4, 1, 2, 8]          # pairs of 16-byte loads in flight a thread
//     GRID_K: [0, 1, 2, 4, 8]
//   dtypes: [float32]
//   about: the triad ceiling (2 reads + 1 write, STREAM's) - out = a + 3 b with streaming 16-byte loads
#include "common/stream.cuh"

__device__ __forceinline__ float triad(float a, float b) { return fmaf(3.0f, b, a); }

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_triad_vec4(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                  elem_t* __restrict__ out, long long n) {
  long long done = 0;
  if (cb::is_aligned16(a) && cb::is_aligned16(b) && cb::is_aligned16(out)) {
    const long long vectors = n / cb::kPack;
    cb::each_vector(vectors, [&](long long v) {
      cb::Vec<elem_t> x, y, z;
      x.raw = cb::load16_stream(a + v * cb::kPack);
      y.raw = cb::load16_stream(b + v * cb::kPack);
#pragma unroll
      for (int e = 0; e < cb::kPack; ++e) z.set(e, triad(x.get(e), y.get(e)));
      cb::store16(out + v * cb::kPack, z.raw);
    });
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) {
    out[i] = cb::from_float<elem_t>(triad(cb::to_float(a[i]), cb::to_float(b[i])));
  });
}
