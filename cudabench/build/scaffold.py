"""`cudabench new op`: a starter op folder, `<dir>/<name>/op.py` and `naive.cu`, that is right
as written: `cudabench check` passes on it without a GPU, and `cudabench run` validates it
on one. Two styles: `row` (out = x / sqrt(mean(x^2) + eps) along each row, a block a row) and
`elementwise` (out = x / (1 + exp(-x)), a thread an element). No printing here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

STYLES = ("row", "elementwise")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ScaffoldError(ValueError):
    """Bad usage: one line (the name is taken, the folder exists...)."""


@dataclass(frozen=True)
class Written:
    folder: Path
    files: tuple[Path, ...]


ROW_OP = '''\
"""{name}: out = x / sqrt(mean(x^2) + eps) along each row. A starter from `cudabench new op`:
change the reference, the declarations and naive.cu together (docs/guide/ops.md explains each line).

    cudabench check --ops {root} {name}        # compiles naive.cu, checks its parameters
    cudabench run {name} --ops {root} -s 4096x8192 -d bfloat16
"""

from cudabench.op import Op, Scalar, Tensor, block_rows, xp_of

EPS = 1e-6


def cupy_rows(x):
    """The CuPy (or NumPy) expression in float32: the baseline the kernels are timed against."""
    xp = xp_of(x)
    x32 = x.astype(xp.float32)
    return (x32 / xp.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + EPS)).astype(x.dtype)


class {cls}(Op):
    about = "out = x / sqrt(mean(x^2) + eps) along each row (a starter)"
    dims = ("rows", "cols")  # -s 4096x8192; a 1-D shape is one row
    inputs = (Tensor("x", "rows cols"),)  # seeded normal random numbers
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("rows"), Scalar("cols"), Scalar("eps", "float", EPS))
    # the kernel's arguments: inputs, outputs, then scalars: (x, out, rows, cols, eps)
    rules = {{"row": block_rows()}}  # `grid: row` in a header: a block per row
    accumulate = "cols"  # each output depends on a float32 sum of `cols` terms
    library = {{"cupy": cupy_rows}}

    def reference(self, xp, x):
        """The exact result, from float64 copies of the inputs."""
        return x / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + EPS)

    def flop_count(self, dims):
        return 4 * dims.rows * dims.cols  # square, add, scale (twice): the roofline's count
'''

ROW_KERNEL = """\
// cudabench:
//   variant: naive
//   entry: {name}_naive
//   block: BLOCK
//   grid: row
//   params: {{BLOCK: [256, 128, 512, 1024]}}   # threads a block: `cudabench tune` searches it
//   dtypes: [float32, float16, bfloat16]
//   about: a block per row, the sum of squares by a shared-memory tree, then each element scaled (a starter)
#include "common/dtype.cuh"

#ifndef BLOCK  // set by the header's params: (-DBLOCK=256 by default)
#define BLOCK 256
#endif

// The op's argument list (op.py): x, out, rows, cols, eps. elem_t is the run's dtype; the
// arithmetic is float.
extern "C" __global__ void __launch_bounds__(BLOCK)
{name}_naive(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long rows,
{pad}long long cols, float eps) {{
  __shared__ float partial[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const elem_t* in = x + row * cols;
  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {{
    const float v = cb::to_float(in[c]);
    sum += v * v;
  }}
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {{
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }}
  const float scale = rsqrtf(partial[0] / (float)cols + eps);
  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    out[row * cols + c] = cb::from_float<elem_t>(cb::to_float(in[c]) * scale);
}}
"""

ELEMENTWISE_OP = '''\
"""{name}: out = x / (1 + exp(-x)) (SiLU), elementwise. A starter from `cudabench new op`:
change the reference, the declarations and naive.cu together (docs/guide/ops.md explains each line).

    cudabench check --ops {root} {name}        # compiles naive.cu, checks its parameters
    cudabench run {name} --ops {root} -s 2^24 -d bfloat16
"""

from cudabench.op import Op, Scalar, Tensor, elements, xp_of


def cupy_silu(x):
    """The CuPy (or NumPy) expression in float32: the baseline the kernels are timed against."""
    xp = xp_of(x)
    x32 = x.astype(xp.float32)
    return (x32 / (1 + xp.exp(-x32))).astype(x.dtype)


class {cls}(Op):
    about = "out = x / (1 + exp(-x)) (SiLU), elementwise (a starter)"
    dims = ("n",)  # -s 16777216 or 2^24
    ranks = (1, 2)  # a 2-D shape's sizes multiply into n
    inputs = (Tensor("x", "n"),)  # seeded normal random numbers
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    # the kernel's arguments: inputs, outputs, then scalars: (x, out, n)
    rules = {{"elements": elements()}}  # `grid: elements` in a header: a thread an element
    ulps = 16  # the tolerance: 16 float32 units of |reference| (and the dtype's rounding)
    library = {{"cupy": cupy_silu}}

    def reference(self, xp, x):
        """The exact result, from float64 copies of the inputs."""
        return x / (1 + xp.exp(-x))

    def flop_count(self, dims):
        return 4 * dims.n  # negate, exp, add, divide: the roofline's count
'''

ELEMENTWISE_KERNEL = """\
// cudabench:
//   variant: naive
//   entry: {name}_naive
//   block: 256
//   grid: elements
//   dtypes: [float32, float16, bfloat16]
//   about: a thread per element (a starter)
#include "common/dtype.cuh"

// The op's argument list (op.py): x, out, n. elem_t is the run's dtype; the arithmetic is
// float.
extern "C" __global__ void __launch_bounds__(256)
{name}_naive(const elem_t* __restrict__ x, elem_t* __restrict__ out, long long n) {{
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {{
    const float v = cb::to_float(x[i]);
    out[i] = cb::from_float<elem_t>(v / (1.0f + expf(-v)));
  }}
}}
"""


def class_name(name: str) -> str:
    """rms_norm -> RmsNorm."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "MyOp"


def new_op(name: str, root: Path, style: str = "row") -> Written:
    """Write `root/name/op.py` and `naive.cu`; ScaffoldError (one line) if the name is not
    an identifier, names an op that exists, or the folder is there already."""
    from cudabench.ops import registry

    if not _NAME.match(name):
        raise ScaffoldError(f"op name {name!r} must be a C identifier (letters, digits, _)")
    if style not in STYLES:
        raise ScaffoldError(f"--style {style!r}: choose {' or '.join(STYLES)}")
    folder = root / name
    if folder.exists():
        raise ScaffoldError(f"{folder} exists already: choose another name or folder")
    existing = registry.op_file(name)
    if existing:
        raise ScaffoldError(f"op {name!r} exists already ({existing}): choose another name")
    values = {"name": name, "cls": class_name(name), "root": root, "pad": " " * (len(name) + 7)}
    op_text, kernel = (ROW_OP, ROW_KERNEL) if style == "row" else (ELEMENTWISE_OP, ELEMENTWISE_KERNEL)
    try:
        folder.mkdir(parents=True)
        (folder / "op.py").write_text(op_text.format(**values))
        (folder / "naive.cu").write_text(kernel.format(**values))
    except OSError as exc:
        raise ScaffoldError(f"{folder}: cannot write: {exc.strerror}") from None
    return Written(folder, (folder / "op.py", folder / "naive.cu"))
