"""What each catalogue op does on a few shapes, as plain JSON: inputs, float64 reference and
tolerance (hashed), bytes, FLOPs, output shape, and for every built-in variant its geometry
and the exact kernel argument list (order, array roles, scalar types and values).

The inputs are hashed (every CPU draws them alike); the reference and the tolerance are
kept as sums and sampled values and compared with a relative tolerance of 1e-9 (`close`:
transcendental functions differ by CPU in the last place).

tests/fixtures/catalogue_before.json holds this record as the per-op modules
(cudabench/ops/reduce.py, softmax.py, ...) computed it before the ops moved to
kernels/<op>/op.py; test_catalogue.py records it again from the op files and compares.
Run `python tests/catalogue_record.py > tests/fixtures/catalogue_before.json` to re-record.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import numpy as np

from cudabench.backends.fake import FAKE_DEVICE
from cudabench.core.dtypes import get_dtype
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case
from cudabench.measure.problem import problem as _problem
from cudabench.ops.discovery import discover
from cudabench.ops.registry import get_op

SHAPES: dict[str, list[tuple[int, ...]]] = {
    "reduce": [(7, 100), (1000,), (3, 2000)],
    "reduce_max": [(7, 100), (1000,), (3, 2000)],
    "reduce_scale": [(6, 96), (200,)],
    "softmax": [(7, 100), (1500,), (5, 1030)],
    "add": [(1001,), (7, 33)],
    "sigmoid": [(1001,), (7, 33)],
    "relu": [(1001,), (7, 33)],
    "transpose": [(33, 70)],
    "gemv": [(40, 70)],
    "sgemm": [(20, 30, 17)],
    "stream_read": [(5000,)],
    "stream_write": [(5000,)],
    "stream_copy": [(5000,)],
    "stream_triad": [(5000,)],
    "fma": [(3000,)],
}
DTYPES = ("float32", "bfloat16")
SEED = 7


def digest(array: Any) -> str:
    """Exactly these bytes: for what every CPU computes alike (NumPy's seeded generators, the
    rounding of a float32 to bfloat16)."""
    a = np.ascontiguousarray(array)
    return f"{a.dtype}{list(a.shape)}:" + hashlib.sha256(a.tobytes()).hexdigest()[:20]


SAMPLES = 24  # values kept of a computed array, evenly spaced


def summary(array: Any) -> dict[str, Any]:
    """A computed float array as numbers a comparison can allow a last bit on: NumPy's exp,
    tanh and friends differ by CPU (an AMD EPYC and an Intel host disagree in the last place
    of sigmoid's and softmax's references), so these are compared with a tolerance
    (`close`), never hashed."""
    a = np.ascontiguousarray(array, dtype=np.float64).reshape(-1)
    picks = np.linspace(0, a.size - 1, min(SAMPLES, a.size)).astype(int) if a.size else []
    return {
        "size": int(a.size),
        "sum": float(a.sum()),
        "abs_sum": float(np.abs(a).sum()),
        "values": [float(a[i]) for i in picks],
    }


def close(now: Any, before: Any, rel: float = 1e-9) -> bool:
    """Two records equal but for the last bits of their computed numbers."""
    if isinstance(now, dict) and isinstance(before, dict):
        return now.keys() == before.keys() and all(close(now[k], before[k], rel) for k in now)
    if isinstance(now, list) and isinstance(before, list):
        return len(now) == len(before) and all(close(a, b, rel) for a, b in zip(now, before))
    if isinstance(now, float) and isinstance(before, float):
        return bool(np.isclose(now, before, rtol=rel, atol=0.0)) or now == before
    return bool(now == before)


def _arg(arg: Any, inputs: tuple[Any, ...], out: Any, workspace: dict[str, Any]) -> str:
    if isinstance(arg, np.ndarray):
        for i, x in enumerate(inputs):
            if arg is x:
                return f"input{i}"
        if arg is out:
            return "out"
        for name, w in workspace.items():
            if arg is w:
                return f"workspace:{name}:{w.dtype}:{w.size}"
        return "unknown array"
    return f"{type(arg).__name__}:{arg!r}"


def record_case(name: str, shape: tuple[int, ...], dtype: str) -> dict[str, Any]:
    op = get_op(name)
    d = get_dtype(dtype)
    given = _problem(np, op, Case(name, shape, dtype), SEED)
    inputs, ref, tol = given.inputs, given.ref, given.tol
    found: dict[str, Any] = {
        "output_shape": list(op.output_shape(shape)),
        "bytes_moved": op.bytes_moved(shape, d.itemsize),
        "bytes_read": op.bytes_read(shape, d.itemsize),
        "arithmetic": op.arithmetic(shape),
        "flops": op.flops(shape) if getattr(op, "flops", None) else None,
        "device_bytes": op.device_bytes(shape),
        "inputs": [digest(x) for x in inputs],
        "reference": summary(ref),
        "tolerance": summary(tol),
        "unused_params": list(getattr(op, "unused_params", lambda s: ())(shape)),
        "variants": {},
    }
    for variant in discover(name, [BUILTIN_KERNELS])[0]:
        if getattr(variant, "kind", "cuda") != "cuda":  # Python variants have no launches
            continue
        unmet = op.unmet(variant, shape)
        entry: dict[str, Any] = {"unmet": unmet}
        if unmet is None:
            launches = []
            for launch in variant.launches:
                try:
                    g = op.geometry(launch, variant, shape, FAKE_DEVICE, 4, d.itemsize)
                except ValueError as exc:
                    launches.append({"error": str(exc).replace(str(BUILTIN_KERNELS), "kernels")})
                    continue
                out = np.empty(op.output_shape(shape), dtype=d.array_type())
                workspace = {k: np.zeros(n, dtype=t) for k, (n, t) in g.workspace.items()}
                args = op.kernel_args(inputs, out, workspace, g)
                launches.append(
                    {
                        "grid": repr(g.grid),
                        "block": repr(g.block),
                        "scalars": list(g.scalars),
                        "workspace": {k: list(v) for k, v in g.workspace.items()},
                        "shared_bytes": g.shared_bytes,
                        "args": [_arg(a, inputs, out, workspace) for a in args],
                    }
                )
            entry["launches"] = launches
        found["variants"][variant.name] = entry
    return found


def record() -> dict[str, Any]:
    ops: dict[str, Any] = {}
    for name, shapes in SHAPES.items():
        op = get_op(name)
        ops[name] = {
            "about": op.about,
            "grid_rules": list(op.grid_rules),
            "requirements": sorted(op.requirements),
            "in_place": bool(getattr(op, "in_place", False)),
            "baselines": sorted(op.baselines()),
            "cases": {
                f"{'x'.join(map(str, s))}/{d}": record_case(name, s, d) for s in shapes for d in DTYPES
            },
        }
    return ops


if __name__ == "__main__":
    json.dump(record(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
