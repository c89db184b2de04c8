// Host emulation of transpose pack16 (kernels/transpose/pack16.cu): its two phases
// (load_packs / store_packs, or the element path) run thread after thread for every block of
// the grid, on shapes whole packs and not, buffers aligned and not; the output must be the
// exact transpose and every tile visited once. Built and run by tests/test_host_emulation.py.
#include "transpose/pack16.cu"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
static unsigned long long rng = 88172645463325252ull;
static uint16_t rnd() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint16_t)rng; }
int run(int M, int N, int shift) {
  size_t n = (size_t)M * N;
  uint16_t* inb = (uint16_t*)aligned_alloc(256, (n + 64) * 2 + 256);
  uint16_t* outb = (uint16_t*)aligned_alloc(256, (n + 64) * 2 + 256);
  uint16_t* in = inb + shift; uint16_t* out = outb + shift;
  for (size_t i = 0; i < n; ++i) in[i] = rnd();
  for (size_t i = 0; i < n; ++i) out[i] = 0xDEAD;
  const int gx = (N + kT - 1) / kT, gy = (M + kT - 1) / kT;
  std::vector<uint4> tile(kT * kB);
  std::vector<int> visits(gx * gy, 0);
  for (int by = 0; by < gy; ++by) for (int bx = 0; bx < gx; ++bx) {
    At at = tile_at(bx, by, gx, gy);
    visits[(at.row0 / kT) * gx + at.col0 / kT]++;
    for (auto& u : tile) u = make_uint4(0x11111111, 0x22222222, 0x33333333, 0x44444444);
    const elem_t* ie = reinterpret_cast<const elem_t*>(in); elem_t* oe = reinterpret_cast<elem_t*>(out);
    bool packs = whole_packs(ie, oe, M, N);
    for (int t = 0; t < BLOCK; ++t) packs ? load_packs(t, at, ie, M, N, tile.data()) : load_elements(t, at, ie, M, N, reinterpret_cast<elem_t*>(tile.data()));
    for (int t = 0; t < BLOCK; ++t) packs ? store_packs(t, at, oe, M, N, tile.data()) : store_elements(t, at, oe, M, N, reinterpret_cast<const elem_t*>(tile.data()));
  }
  int bad = 0;
  for (int v : visits) if (v != 1) { bad++; }
  if (bad) printf("tile visits wrong M=%d N=%d\n", M, N);
  for (int i = 0; i < M && bad < 5; ++i) for (int j = 0; j < N; ++j)
    if (out[(size_t)j * M + i] != in[(size_t)i * N + j]) { if (bad++ < 5) printf("M=%d N=%d shift=%d (%d,%d) got %04x want %04x\n", M, N, shift, i, j, out[(size_t)j*M+i], in[(size_t)i*N+j]); break; }
  free(inb); free(outb);
  return bad;
}
int main() {
  int shapes[][2] = {{1,1},{31,33},{33,65},{8,8},{64,64},{128,128},{4096,4104},{1000,64},{65537,3},{3,65537},{4097,1025},{200,136},{136,200},{8,1024},{1024,8},{4097,4095},{512,512},{264,776},{1,8},{8,1}};
  int bad = 0, n = 0;
  for (auto& s : shapes) for (int shift : {0, 1}) { bad += run(s[0], s[1], shift) != 0; ++n; }
  printf("TILE=%d BLOCK=%d GROUP=%d: %d shapes, %d bad\n", TILE, BLOCK, GROUP, n, bad);
  return bad != 0;
}
