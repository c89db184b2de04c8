import os, math, subprocess, tempfile
import cupy as cp, numpy as np
from cudabench.backends.cupy_backend import CupyBackend
from cudabench.measure import measure
from cudabench.spec import TimingOptions
b = CupyBackend(); dev = b.device_info()
subprocess.run(['nvcc', '-cubin', '-arch=sm_90', '-O3', '-std=c++17', '-Ikernels', '-o', '/tmp/e.cubin', 'dbg/rows_pipe.cu'], check=True)
subprocess.run(['nvcc', '-cubin', '-arch=sm_90', '-O3', '-std=c++17', '-Ikernels', '-o', '/tmp/a.cubin', 'kernels/reduce/atomic.cu'], check=True)
m = cp.RawModule(path='/tmp/e.cubin'); pipe = m.get_function('rows_pipe'); even = m.get_function('even_share')
atomic = cp.RawModule(path='/tmp/a.cubin').get_function('reduce_sum_atomic')
occ = lambda f: cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(f.kernel.ptr, 256, 0)
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
    mm = measure(b, call, opts)
    return f"{mm.median_ms * 1e3:.2f}" + ("" if err < 1.0 else f"!ERR{err:.1e}")
base = lambda x: f"{measure(b, lambda: x.sum(axis=-1), opts).median_ms * 1e3:.2f}"
x = cp.random.default_rng(1).random((442368, 128), dtype=cp.float32) - 0.5
print("rows cupy", base(x), "pipe regs", pipe.num_regs, "occ", occ(pipe), flush=True)
need = math.ceil(442368 / 4 / 8)
print("  pipe", " ".join(f"w{k}:{bench(x, min(need, k * occ(pipe) * dev.sm_count), 32, 1, pipe)}" for k in (1, 2, 3, 4, 100000)), flush=True)
print("  atomic(prod)", bench(x, need, 32, 1, atomic), flush=True)
del x
for n in (1 << 20, 1 << 24, 1 << 30):
    x = cp.random.default_rng(2).random(n, dtype=cp.float32) - 0.5
    line = f"1-D {n} cupy {base(x)} |"
    for name, f in (("atomic", atomic), ("even", even)):
        for el in (16, 64, 256):
            for w in (1, 2):
                chunks = max(1, min(w * occ(f) * dev.sm_count, math.ceil(n / (256 * el))))
                line += f" {name}/el{el}/w{w}/{chunks}:{bench(x, chunks, 256, chunks, f)}"
    print(line, flush=True)
    del x
