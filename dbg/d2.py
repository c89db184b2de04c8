import cupy as cp, numpy as np
import cudabench.runner as R
from cudabench.backends import open_backend
from cudabench.spec import Case, TimingOptions
from cudabench.ops.reduce import OP
orig = R.check_output
def spy(xp, out, ref, tol):
    c = orig(xp, out, ref, tol)
    print("CHECK out", out.ravel()[:4], "ref", ref.ravel()[:4], "tol", tol.ravel()[:4], "->", c)
    return c
R.check_output = spy
orig_ref = OP.reference
def ref2(xp, inputs):
    xp.cuda.get_current_stream().synchronize()
    print("INPUT", inputs[0].ravel()[:4], inputs[0].shape, "stream", xp.cuda.get_current_stream())
    r = orig_ref(xp, inputs); print("REF", r[0].ravel()[:4]); return r
OP.reference = ref2
b = open_backend("cupy")
from cudabench.kernels import discover, BUILTIN_KERNELS
vs, _ = discover("reduce", [BUILTIN_KERNELS])
vs = [v for v in vs if v.name in ("shuffle",)]
job = R.CaseJob(Case("reduce", (1,)), tuple(vs), ("cupy",), TimingOptions(min_samples=2, max_time_s=0.01))
for row in R.Runner(b).run_job(job): print(row.variant, row.status, row.error)
