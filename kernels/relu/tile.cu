// cudabench:
//   variant: tile
//   entry: relu_tile
//   block: BLOCK
//   grid: tiles
//   params:
//     BLOCK: [256, 128, 512]
//     UNROLL: [1, 2, 4, 8]          # 16-byte loads of each input in flight a thread, all its work
//     STREAM_LOADS: [0, 1]          # 1: ld.global.nc.L1::no_allocate (common/dtype.cuh)
//     STREAM_STORES: [0, 1]         # 1: evict-first stores (st.global.cs)
//   dtypes: [float32, float16, bfloat16]
//   about: float4 with more bytes in flight - a block per BLOCK x UNROLL 16-byte vectors, every load of a thread issued before the first is used, the cache hints a choice
#include "common/elementwise.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
relu_tile(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {
  cb::map_tile(x, out, n, cb::Relu());
}
