// cudabench:
//   variant: warp
//   entry: rowsum_warp
//   block: BLOCK
//   grid: warp_groups
//   params:
//     BLOCK: [256, 32, 64, 128, 512, 1024]   # threads a block
//     ROWS: [1, 2, 4]                        # rows a warp sums at once
//     UNROLL: [2, 1, 4]                      # loads in flight a lane, per row
//     VEC: [4, 1, 2]                         # floats a load
//   about: a warp sums ROWS rows, each lane a strided slice read VEC floats at a time, then a shuffle tree
//
// Any rows x cols: a warp's rows past the last are skipped, columns past cols are zeros, and
// where cols % VEC != 0 or x is not aligned to VEC floats the rows are read a float at a time.

template <int V> struct vec;
template <> struct vec<1> { typedef float type; };
template <> struct vec<2> { typedef float2 type; };
template <> struct vec<4> { typedef float4 type; };

__device__ __forceinline__ float total(float v) { return v; }
__device__ __forceinline__ float total(float2 v) { return v.x + v.y; }
__device__ __forceinline__ float total(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// this lane's share of rows row0 .. row0 + ROWS - 1, V floats a load
template <int V>
__device__ __forceinline__ void lane_sums(const float* __restrict__ x, int rows, int cols,
                                          long long row0, float (&acc)[ROWS]) {
  typedef typename vec<V>::type T;
  const unsigned n = (unsigned)(cols / V);  // loads a row
  for (unsigned c = threadIdx.x % 32; c < n; c += 32 * UNROLL) {
    T v[ROWS][UNROLL];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const bool here = row0 + r < rows;
      const T* row = reinterpret_cast<const T*>(x + (here ? row0 + r : 0) * cols);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) v[r][u] = here && c + 32 * u < n ? __ldg(row + c + 32 * u) : T{};
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc[r] += total(v[r][u]);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rowsum_warp(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
  const long long row0 = ((long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32) * ROWS;
  if (row0 >= rows) return;  // the whole warp leaves
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
  const bool aligned = cols % VEC == 0 && reinterpret_cast<unsigned long long>(x) % (VEC * 4) == 0;
  if (VEC > 1 && aligned)
    lane_sums<VEC>(x, rows, cols, row0, acc);
  else
    lane_sums<1>(x, rows, cols, row0, acc);
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      if (row0 + r < rows) out[row0 + r] = acc[r];
}
