import cupy as cp, numpy as np
from cudabench.ops.reduce import OP
s = cp.cuda.Stream(non_blocking=True); s.use()
for shape in [(1,), (3,5)]:
    (x,) = OP.make_inputs(cp, shape, 123)
    ref, tol = OP.reference(cp, (x,))
    got = x.sum(axis=-1)
    s.synchronize()
    print(shape, "x", x, "ref", ref, "tol", tol, "got", got)
    print("again ref", x.sum(axis=-1, dtype=cp.float64), "abs", cp.abs(x).sum(axis=-1, dtype=cp.float64), "np", cp.asnumpy(x).astype(np.float64).sum(-1))
cp.cuda.Stream.null.use()
(x,) = OP.make_inputs(cp, (1,), 123); print("null stream", x, x.sum(axis=-1, dtype=cp.float64), x.sum(axis=-1))
y = cp.random.default_rng(5).random((2,3), dtype=cp.float32); print(y, y.sum(axis=-1), y.sum(axis=-1, dtype=cp.float64), cp.asnumpy(y).sum(-1))
