// cudabench:
//   variant: bulk
//   entry: stream_copy_bulk
//   block: 32
//   grid: persistent
//   params:
//     CHUNK: [4096, 8192, 16384]    # bytes a bulk copy moves
//     STAGES: [5, 2, 4, 8]          # chunks of shared memory a block cycles through
//     GRID_K: [2, 0, 1, 4]          # blocks an SM (0: as many as are resident)
//   constraints: ["STAGES * CHUNK <= 40960"]   # static shared memory stays under 48 KiB
//   requires: {min_sm: 90}
//   dtypes: [float32]
//   about: the copy by the TMA engine (sm_90 cp.async.bulk), global to shared to global in CHUNK-byte copies that one thread a block issues, STAGES in flight
//
// The technique the issue's list names for sm_90: bulk asynchronous copies, issued by one
// thread, completing on an mbarrier (loads) or a bulk group (stores), no registers holding
// data. Kept as the measured answer to "does the TMA move bytes faster than 16-byte loads
// and stores": on an H200 (2026-11-24, docs/performance.md) 2^28 floats took 526.3 us at the
// defaults, the tile copy 502.8 and cudaMemcpy 505.5: the engine reaches 96% of the copy
// ceiling, not more, so the catalogue's streaming kernels keep their vector loads.
//
// A block takes chunks blockIdx.x, blockIdx.x + gridDim.x, ... of the 16-byte-aligned body
// (the last one shorter). The ring: chunk i lands in stage i % STAGES; once it has arrived
// its store is issued, and the stage of chunk i - 1, whose store has by then read it
// (cp.async.bulk.wait_group.read 1), is refilled with chunk i - 1 + STAGES. Buffers that are
// not 16-byte aligned, and the last n % 4 floats, go element by element.
#include <cuda/ptx>

#include "common/stream.cuh"

namespace ptx = cuda::ptx;

extern "C" __global__ void __launch_bounds__(32)
stream_copy_bulk(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                 elem_t* __restrict__ out, long long n) {
  long long done = 0;
#if __CUDA_ARCH__ >= 900  // bulk copies need sm_90; `min_sm` keeps the variant off older GPUs
  __shared__ alignas(128) unsigned char stage[STAGES][CHUNK];
  __shared__ uint64_t arrived[STAGES];
  if (cb::is_aligned16(a) && cb::is_aligned16(out)) {
    const long long bytes = (long long)(n * sizeof(elem_t)) / 16 * 16;
    const long long chunks = (bytes + CHUNK - 1) / CHUNK;
    if (threadIdx.x == 0) {
      const char* src = reinterpret_cast<const char*>(a);
      char* dst = reinterpret_cast<char*>(out);
      auto size_of = [&](long long c) {
        return (uint32_t)(bytes - c * CHUNK < CHUNK ? bytes - c * CHUNK : CHUNK);
      };
      auto load = [&](int s, long long c) {  // chunk c into stage s; arrived[s] flips when in
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared,
                                       &arrived[s], size_of(c));
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, stage[s], src + c * CHUNK,
                           size_of(c), &arrived[s]);
      };
      for (int s = 0; s < STAGES; ++s) ptx::mbarrier_init(&arrived[s], 1);
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
      for (int s = 0; s < STAGES; ++s) {
        const long long c = blockIdx.x + (long long)s * gridDim.x;
        if (c < chunks) load(s, c);
      }
      for (long long i = 0, c = blockIdx.x; c < chunks; ++i, c += gridDim.x) {
        const int s = (int)(i % STAGES);
        while (!ptx::mbarrier_try_wait_parity(&arrived[s], (uint32_t)((i / STAGES) & 1))) {
        }
        ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, dst + c * CHUNK, stage[s],
                           size_of(c));
        ptx::cp_async_bulk_commit_group();
        if (i >= 1) {  // chunk i - 1's store has read its stage: refill it
          ptx::cp_async_bulk_wait_group_read(ptx::n32_t<1>());
          const long long next = c + (long long)(STAGES - 1) * gridDim.x;
          if (next < chunks) load((int)((i - 1) % STAGES), next);
        }
      }
      ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>());  // shared memory read before exit
    }
    done = bytes / (long long)sizeof(elem_t);
  }
#endif
  cb::each_element(done, n, [&](long long i) { out[i] = a[i]; });
}
