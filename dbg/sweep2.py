import os, math, subprocess, tempfile, itertools
import cupy as cp, numpy as np
from cudabench.backends.cupy_backend import CupyBackend
from cudabench.measure import measure
from cudabench.spec import TimingOptions
b = CupyBackend(); dev = b.device_info()
cuh = open('kernels/common/reduce.cuh').read()
def build(name, wr=4, mb=1, loads=4):
    src = open(f'kernels/reduce/{name}.cu').read()
    d = tempfile.mkdtemp(); os.makedirs(d + '/common')
    c = cuh.replace('constexpr int kWarpRows = 4;', f'constexpr int kWarpRows = {wr};').replace('constexpr int kLoads = 4;', f'constexpr int kLoads = {loads};')
    open(d + '/common/reduce.cuh', 'w').write(c)
    open(d + '/k.cu', 'w').write(src.replace('__launch_bounds__(256)', f'__launch_bounds__(256, {mb})'))
    r = subprocess.run(['nvcc', '-cubin', '-arch=sm_90', '-O3', '-I' + d, '-o', d + '/k.cubin', d + '/k.cu', '-Xptxas', '-v'], capture_output=True, text=True, check=True)
    spill = [l.split(',')[1].strip() for l in r.stderr.splitlines() if 'spill' in l]
    f = cp.RawModule(path=d + '/k.cubin').get_function(f'reduce_sum_{name}')
    occ = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.kernel.ptr, 256, 0)
    return f, f"regs={f.num_regs} occ={occ} {spill[0] if spill else ''}", occ
opts = TimingOptions(min_samples=20, min_time_s=0.1, max_time_s=1)
def bench(x, grid, group, chunks, f):
    rows, cols = (1, x.shape[0]) if x.ndim == 1 else x.shape
    out = cp.full(rows, cp.nan, cp.float32)
    part = cp.zeros(max(1, rows * chunks), cp.float32); cnt = cp.zeros(max(1, rows), cp.uint32)
    args = (x, out, part, cnt, np.int64(rows), np.int64(cols), np.int32(group), np.int32(chunks))
    call = lambda: f((grid,), (256,), args)
    call(); b.synchronize()
    ref = x.sum(axis=-1, dtype=cp.float64).reshape(-1)
    err = float((cp.abs(out.astype(cp.float64) - ref) / (1e-6 * cp.abs(x).sum(axis=-1, dtype=cp.float64).reshape(-1))).max())
    m = measure(b, call, opts)
    return f"{m.median_ms * 1e3:.2f}" + ("" if err < 1.0 else f"!ERR{err:.1e}")
def base(x):
    m = measure(b, lambda: x.sum(axis=-1), opts); return m.median_ms * 1e3
for shape in [(442368, 128), (442367, 129)][:1]:
    x = cp.random.default_rng(1).random(shape, dtype=cp.float32) - 0.5
    print(shape, "cupy us", round(base(x), 2), flush=True)
    for name in ("float4", "shuffle"):
        for wr, mb in itertools.product((2, 4, 8), (1, 8)):
            f, info, occ = build(name, wr, mb)
            need = math.ceil(shape[0] / wr / 8)
            res = [f"w{k}:{bench(x, min(need, k * occ * dev.sm_count), 32, 1, f)}" for k in (1, 2, 100000)]
            print(f"  {name} wr={wr} mb={mb} {info} -> {' '.join(res)}", flush=True)
    del x
builds = {(name, loads): build(name, 4, 1, loads) for name in ("float4", "atomic") for loads in (4, 8)}
for n in (1 << 20, 1000003, 1 << 24, 1 << 30):
    x = cp.random.default_rng(2).random(n, dtype=cp.float32) - 0.5
    print(f"1-D n={n} cupy {base(x):.2f} us", flush=True)
    for (name, loads), (f, info, occ) in builds.items():
        line = f"  {name} loads{loads} {info}:"
        for min_el in (16, 32, 64, 128, 256):
            chunks = max(1, min(occ * dev.sm_count, math.ceil(n / (256 * min_el))))
            line += f" el{min_el}/{chunks}:{bench(x, chunks, 256, chunks, f)}"
        print(line, flush=True)
    del x
