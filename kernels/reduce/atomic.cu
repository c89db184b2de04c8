// cudabench:
//   variant: atomic
//   entry: reduce_sum_atomic
//   block: 256
//   grid: segments
//   about: one pass, float4 loads, block partials atomicAdd-ed into an accumulator that the last block publishes (seed 001; seed 002 reduce_v3/v4)
//
// Long rows: each block atomicAdds its partial into an accumulator (partials[row], zero
// between launches), takes a ticket, and the block with the last ticket swaps the accumulator
// back to zero (atomicExch) and writes the row's sum. Seed 002 atomicAdds straight into the
// output, which must then be zeroed before every launch; here no memset is needed. The order
// of the adds varies from run to run, so the last bits of the sum may too.
// Short rows have no partials to combine: a warp's row sums are stored as in float4.
#include "common/reduce.cuh"

extern "C" __global__ void __launch_bounds__(256)
reduce_sum_atomic(const float* __restrict__ x, float* __restrict__ out, float* partials,
                  unsigned* counters, long long rows, long long cols, int group, int chunks) {
  __shared__ float scratch[32];
  if (group == 32) {  // short rows: no partials to combine, as float4
    cb::reduce_short_rows<true>(x, out, rows, cols);
    return;
  }
  const cb::Segment s = cb::segment_of_block(chunks);  // long rows: a block per segment
  const float v = cb::segment_reduce<true>(x, cols, s, chunks, scratch);
  if (threadIdx.x != 0) return;
  if (chunks == 1) {
    out[s.row] = v;
  } else {
    atomicAdd(&partials[s.row], v);  // block partials meet in the accumulator
    if (cb::take_last_ticket(&counters[s.row], chunks)) {
      out[s.row] = atomicExch(&partials[s.row], 0.0f);
      counters[s.row] = 0;
    }
  }
}
