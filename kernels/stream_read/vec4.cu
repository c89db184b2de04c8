// cudabench:
//   variant: vec4
//   entry: stream_read_vec4
//   block: BLOCK
//   grid: persistent
//   init: zero
//   params:                        # kernels/common/stream.cuh and ops/stream.py read these
//     BLOCK: [256, 128, 512, 1024]
//     UNROLL: [4, 1, 2, 8]          # 16-byte loads in flight a thread
//     GRID_K: [0, 1, 2, 4, 8]       # blocks per SM (0: as many as are resident)
//   dtypes: [float32]
//   about: the read ceiling - streaming 16-byte loads (read-only path, no L1 allocation), UNROLL in flight, a block sum and one atomicAdd a block
#include "common/stream.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
stream_read_vec4(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                 elem_t* __restrict__ out, long long n) {
  __shared__ float scratch[32];
  float sum = 0.0f;
  long long done = 0;
  if (cb::is_aligned16(a)) {
    const long long vectors = n / cb::kPack;
    cb::each_vector(vectors, [&](long long v) {
      cb::Vec<elem_t> x;
      x.raw = cb::load16_stream(a + v * cb::kPack);
      sum += cb::hreduce(x);
    });
    done = vectors * cb::kPack;
  }
  cb::each_element(done, n, [&](long long i) { sum += cb::to_float(a[i]); });
  sum = cb::block_sum(sum, scratch);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}
