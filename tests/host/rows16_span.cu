// Host check of kernels/common/rows16.cuh: for every column count below 600 and every offset
// of a row from a 16-byte boundary, the head, the 16-byte packs and the tail cover the row
// once each (the scalar elements going to threads 0 .. 13 of any block: 32 threads here, the
// smallest), and the packs start 16-byte aligned; rows of up to 4096 + 7 columns have at most
// 512 packs at every offset (block_pack16's register path at BLOCK 256: 2 packs a thread),
// 4104 columns at offset 0 has 513 (the fallback); x and out at different offsets are not
// packed. Built and run by tests/test_host_emulation.py; prints "cases N, B bad".
#include "common/rows16.cuh"
#include <cstdio>
#include <vector>
int main() {
  long long bad = 0, cases = 0;
  for (long long cols = 0; cols < 600; ++cols)
    for (unsigned a = 0; a < 16; a += 2) {
      ++cases;
      const std::uintptr_t base = 4096 + a;
      const cb::rows16::Span s = cb::rows16::span(base, base + 65536, cols);
      if (!s.ok) { ++bad; printf("cols %lld a %u: not packed\n", cols, a); continue; }
      if (s.nv > 0 && ((base + 2 * s.head) & 15) != 0) { ++bad; printf("cols %lld a %u: misaligned packs\n", cols, a); }
      std::vector<int> seen(cols, 0);
      for (int j = 0; j < s.nv; ++j)
        for (int e = 0; e < 8; ++e) seen[s.head + 8 * j + e]++;
      for (int t = 0; t < 32; ++t) {
        const int i = cb::rows16::scalar_index(s, t);
        if (i >= cols) { ++bad; printf("cols %lld a %u t %d: index %d past the row\n", cols, a, t, i); }
        else if (i >= 0) seen[i]++;
      }
      for (long long i = 0; i < cols; ++i)
        if (seen[i] != 1) { ++bad; printf("cols %lld a %u: element %lld seen %d times\n", cols, a, i, seen[i]); break; }
    }
  for (long long cols = 4096; cols <= 4104; ++cols)
    for (unsigned a = 0; a < 16; a += 2) {
      ++cases;
      const cb::rows16::Span s = cb::rows16::span(4096 + a, 4096 + a + 65536, cols);
      const bool fits = s.nv <= 512;
      if (fits != (cols <= 4103 || a != 0)) { ++bad; printf("cols %lld a %u: %d packs\n", cols, a, s.nv); }
    }
  ++cases;
  if (cb::rows16::span(4096 + 2, 8192 + 4, 100).ok) { ++bad; printf("different offsets packed\n"); }
  printf("cases %lld, %lld bad\n", cases, bad);
  return bad != 0;
}
