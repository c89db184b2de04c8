import os, math, subprocess, tempfile, itertools
import cupy as cp, numpy as np
from cudabench.backends.cupy_backend import CupyBackend
from cudabench.measure import measure
from cudabench.spec import TimingOptions
b = CupyBackend(); dev = b.device_info()
src = open('kernels/reduce/float4.cu').read(); cuh = open('kernels/common/reduce.cuh').read()
assert 'constexpr int kWarpRows = 4;' in cuh
def build(wr, mb):
    d = tempfile.mkdtemp(); os.makedirs(d + '/common')
    open(d + '/common/reduce.cuh', 'w').write(cuh.replace('constexpr int kWarpRows = 4;', f'constexpr int kWarpRows = {wr};'))
    open(d + '/k.cu', 'w').write(src.replace('__launch_bounds__(256)', f'__launch_bounds__(256, {mb})'))
    r = subprocess.run(['nvcc', '-cubin', '-arch=sm_90', '-O3', '-I' + d, '-o', d + '/k.cubin', d + '/k.cu', '-Xptxas', '-v'], capture_output=True, text=True, check=True)
    spill = [l for l in r.stderr.splitlines() if 'spill' in l]
    f = cp.RawModule(path=d + '/k.cubin').get_function('reduce_sum_float4')
    return f, spill[0].strip() if spill else ''
opts = TimingOptions(min_samples=20, min_time_s=0.1, max_time_s=1)
def bench(x, grid, group, chunks, f):
    rows, cols = (1, x.shape[0]) if x.ndim == 1 else x.shape
    out = cp.full(rows, cp.nan, cp.float32)
    part = cp.zeros(max(1, rows * chunks), cp.float32); cnt = cp.zeros(max(1, rows), cp.uint32)
    args = (x, out, part, cnt, np.int64(rows), np.int64(cols), np.int32(group), np.int32(chunks))
    call = lambda: f((grid,), (256,), args)
    call(); b.synchronize()
    ref = x.sum(axis=-1, dtype=cp.float64).reshape(-1)
    err = float(cp.abs(out.astype(cp.float64) - ref).max())
    m = measure(b, call, opts)
    return m.median_ms * 1e3, err
def base(x):
    m = measure(b, lambda: x.sum(axis=-1), opts); return m.median_ms * 1e3
x = cp.random.default_rng(1).random((442368, 128), dtype=cp.float32) - 0.5
print("rows 442368x128 cupy us", round(base(x), 2))
for wr, mb in itertools.product((2, 4, 8), (1, 6, 8)):
    f, spill = build(wr, mb)
    occ = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.kernel.ptr, 256, 0)
    grid = math.ceil(442368 / wr / 8)
    t, err = bench(x, grid, 32, 1, f)
    print(f"rows wr={wr} minblocks={mb} regs={f.num_regs} occ={occ} {spill} -> {t:.2f} us err={err:.2e}")
del x
fs = {mb: build(4, mb)[0] for mb in (1, 8)}
for n in (1 << 20, 1000003, 1 << 24, 1 << 30):
    x = cp.random.default_rng(2).random(n, dtype=cp.float32) - 0.5
    line = f"1-D n={n} cupy {base(x):.2f} us |"
    for mb, f in fs.items():
        occ = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.kernel.ptr, 256, 0)
        for min_el in (16, 32, 64, 128):
            for waves in (1, 2):
                chunks = max(1, min(waves * occ * dev.sm_count, math.ceil(n / (256 * min_el))))
                t, err = bench(x, chunks, 256, chunks, f)
                line += f" mb{mb}/el{min_el}/w{waves}:{chunks}:{t:.2f}"
    print(line, flush=True)
    del x
