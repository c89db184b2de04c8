// cudabench:
//   variant: tile
//   entry: add_tile
//   block: BLOCK
//   grid: tiles
//   params:
//     BLOCK: [256, 128, 512]
//     UNROLL: [2, 1, 4, 8]          # 16-byte loads of each input in flight a thread, all its work
//     STREAM_STORES: [0, 1]         # 1: evict-first stores (st.global.cs)
//   dtypes: [float32, float16, bfloat16]
//   about: float4 with more bytes in flight - a block per BLOCK x UNROLL 16-byte vectors, every load of a thread (streaming, no L1 allocation) issued before the first is used
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
add_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ out,
          long long n) {
  cb::map_tile(a, b, out, n, cb::Add());
}
