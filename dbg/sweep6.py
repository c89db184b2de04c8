import os, math, subprocess, tempfile
import cupy as cp, numpy as np
from cudabench.backends.cupy_backend import CupyBackend
from cudabench.measure import measure
from cudabench.spec import TimingOptions
b = CupyBackend(); dev = b.device_info()
cuh = open('kernels/common/reduce.cuh').read(); src = open('kernels/reduce/float4.cu').read()
A = 'reinterpret_cast<const float4*>(x + (w.row0 + r) * cols)[j]'; B = 'body[i + k * stride]'
def build(qual):
    d = tempfile.mkdtemp(); os.makedirs(d + '/common')
    c = cuh
    if qual:
        fn = ('__device__ __forceinline__ float4 ldx(const float4* p) { float4 v; asm("ld.global.' + qual +
              '.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p)); return v; }\n')
        c = c.replace('constexpr int kWarpRows = 4;', 'constexpr int kWarpRows = 4;\n' + fn)
        c = c.replace(A, 'ldx(reinterpret_cast<const float4*>(x + (w.row0 + r) * cols) + j)').replace(B, 'ldx(body + i + k * stride)')
    open(d + '/common/reduce.cuh', 'w').write(c); open(d + '/k.cu', 'w').write(src)
    subprocess.run(['nvcc', '-cubin', '-arch=sm_90', '-O3', '-std=c++17', '-I' + d, '-o', d + '/k.cubin', d + '/k.cu'], check=True)
    f = cp.RawModule(path=d + '/k.cubin').get_function('reduce_sum_float4')
    return f, cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.kernel.ptr, 256, 0)
opts = TimingOptions(min_samples=30, min_time_s=0.2, max_time_s=2)
def bench(x, grid, group, chunks, f):
    rows, cols = (1, x.shape[0]) if x.ndim == 1 else x.shape
    out = cp.full(rows, cp.nan, cp.float32)
    part = cp.zeros(max(1, rows * chunks), cp.float32); cnt = cp.zeros(max(1, rows), cp.uint32)
    args = (x, out, part, cnt, np.int64(rows), np.int64(cols), np.int32(group), np.int32(chunks))
    call = lambda: f((grid,), (256,), args)
    call(); b.synchronize()
    ref = x.sum(axis=-1, dtype=cp.float64).reshape(-1)
    err = float((cp.abs(out.astype(cp.float64) - ref) / (1e-6 * cp.abs(x).sum(axis=-1, dtype=cp.float64).reshape(-1))).max())
    return f"{measure(b, call, opts).median_ms * 1e3:.2f}" + ("" if err < 1.0 else "!ERR")
quals = ["", "nc.L1::no_allocate", "nc.L1::no_allocate.L2::256B", "nc.L2::256B", "nc.L1::no_allocate.L2::128B", "cs"]
builds = [(q, *build(q)) for q in quals]
x = cp.random.default_rng(1).random((442368, 128), dtype=cp.float32) - 0.5
print("rows cupy", f"{measure(b, lambda: x.sum(axis=-1), opts).median_ms * 1e3:.2f}", flush=True)
for rep in range(2):
    print("  " + " | ".join(f"{q or 'plain'}:{bench(x, 13824, 32, 1, f)}" for q, f, o in builds), flush=True)
del x
for n in (1 << 24, 1 << 30):
    x = cp.random.default_rng(2).random(n, dtype=cp.float32) - 0.5
    line = f"1-D {n} cupy {measure(b, lambda: x.sum(axis=-1), opts).median_ms * 1e3:.2f} |"
    for q, f, o in builds:
        chunks = min(o * dev.sm_count, math.ceil(n / (256 * 64)))
        line += f" {q or 'plain'}:{bench(x, chunks, 256, chunks, f)}"
    print(line, flush=True)
    del x
