// Host check of kernels/common/rows16.cuh: for every column count below 600, every offset of a
// row from a 16-byte boundary and several blocks, the head, the 16-byte packs and the tail
// cover the row once each, the packs start 16-byte aligned, and the packs fit the P x BLOCK
// slots of the row_block_hybrid rule. Built and run by tests/test_host_emulation.py.
#include "common/rows16.cuh"
#include <cstdio>
#include <vector>
int main() {
  long long bad = 0, cases = 0;
  for (long long cols = 0; cols < 600; ++cols)
    for (unsigned a = 0; a < 16; a += 2)
      for (int B : {32, 128, 256, 512, 1024}) {
        ++cases;
        std::uintptr_t base = 4096 + a;
        cb::rows16::Span s = cb::rows16::span(base, base + 65536, cols);
        if (!s.ok) { ++bad; continue; }
        std::vector<int> seen(cols, 0);
        // body start aligned?
        if (((base + 2 * s.head) & 15) != 0 && s.nv > 0) { printf("misaligned body\n"); ++bad; }
        for (int j = 0; j < s.nv; ++j) for (int e = 0; e < 8; ++e) seen[s.head + 8 * j + e]++;
        for (int t = 0; t < B; ++t) { int i = cb::rows16::scalar_index(s, t); if (i >= 0) { if (i >= cols) {printf("oob\n"); ++bad;} else seen[i]++; } }
        for (long long i = 0; i < cols; ++i) if (seen[i] != 1) { ++bad; printf("cols %lld a %u B %d elem %lld seen %d\n", cols, a, B, i, seen[i]); break; }
        // hybrid: nv <= P*B where P from cols/8
        int per = (int)((cols / 8 + B - 1) / B); int P = 1; while (P < per) P *= 2;
        if (s.nv > P * B) { ++bad; printf("nv > P*B\n"); }
        if (s.head + s.tail > B) { ++bad; }
      }
  // mismatched alignment -> not ok
  cb::rows16::Span s = cb::rows16::span(4096 + 2, 8192 + 4, 100);
  if (s.ok) { ++bad; printf("mismatch accepted\n"); }
  printf("cases %lld bad %lld\n", cases, bad);
  return bad != 0;
}
