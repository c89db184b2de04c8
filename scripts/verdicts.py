"""Run every op of tests/corpus x variant x dtype x shape through the op API's own checks
(`Op.expected`, `core.dtypes.output_tolerance`, `ops.protocol.check_output`), with the current
default tolerance (old) and the traced bound (new: C * bound + ulps u |ref|, plus the 16-bit
output rounding), on NumPy (no GPU).

    python scripts/verdicts.py run [--quick] [--no-exp-arg]   # -> results/verdicts*.jsonl
    python scripts/verdicts.py report [--c 3]                  # -> the tables of docs/guide/verdicts.md

Per case it records, besides both verdicts, `c_need`: the smallest C at which the variant
passes (max over outputs of (|out - ref| - base) / bound, base = the fixed part and the
16-bit rounding): a correct variant needs C > c_need, a planted fault is caught at C < c_need.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "results"  # where the matrix's records go (ignored by git)
CORPUS = ROOT / "tests" / "corpus"
sys.path.insert(0, str(ROOT))

from cudabench.core.dtypes import DTYPES, output_tolerance  # noqa: E402
from cudabench.op import Op  # noqa: E402
from cudabench.ops import errorbound as eb  # noqa: E402
from cudabench.ops.errorbound import elementwise  # noqa: E402
from cudabench.ops.protocol import check_output  # noqa: E402

U = 2.0**-24
C_GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)
ROWS = [(1,), (2,), (3,), (31,), (33,), (7, 33), (64, 1000), (256, 4096), (16, 32768), (512, 32768)]
SHAPES = {
    "gelu": [(1,), (2,), (3,), (31,), (33,), (1000,), (1 << 20,), (1 << 24,)],
    "silu": [(1,), (2,), (3,), (31,), (33,), (1000,), (1 << 20,), (1 << 24,)],
    "matmul": [(1,), (2,), (3,), (31,), (33,), (7, 33), (64, 64, 1000), (256, 256, 4096), (512, 64, 32768)],
}
QUICK_MAX = 1 << 20  # --quick: shapes up to a million elements
BIG = 1 << 22  # shapes above this run in float32 only, and in bfloat16 for BIG_16 ops
BIG_16 = ("layernorm", "prefix_sum", "softmax_rows", "gelu")
SMALL = 2000  # shapes of at most this many input elements run under several seeds
SEEDS_SMALL = 8


def load_module(path: Path) -> Any:
    name = f"corpus_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_op(folder: Path) -> tuple[Op, list[tuple[str, str, Any, Any]]]:
    module = load_module(folder / "op.py")
    cls = next(
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Op) and v.__module__ == module.__name__
    )
    op = cls()
    op.name = op.name or folder.name
    variants = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "op.py" or path.name.startswith("_"):
            continue
        kind = {"variants": "correct", "bugs": "bug", "alt": "alt"}.get(path.stem)
        if kind is None:  # triton_*.py: GPU variants (tests/test_verdicts_gpu.py runs them)
            continue
        for fn in vars(load_module(path)).values():
            info = getattr(fn, "__cudabench_variant__", None)
            if info is not None:
                variants.append((info.name, kind, fn, info))
    return op, variants


def case_inputs(op: Op, shape: tuple[int, ...], dtype: str, seed: int) -> tuple[Any, ...]:
    inputs = op.make_inputs(np, shape, seed)
    if dtype != "float32":  # as cudabench/problem.py: drawn in float32, rounded once
        inputs = tuple(x.astype(DTYPES[dtype].array_type()) for x in inputs)
    return inputs


def evaluate_case(
    op: Op, variants: list[Any], shape: tuple[int, ...], dtype: str, seed: int
) -> list[dict[str, Any]]:
    dt = DTYPES[dtype]
    inputs = case_inputs(op, shape, dtype, seed)
    t0 = time.perf_counter()
    ref, tol = op.expected(np, inputs)
    t_ref = time.perf_counter() - t0
    tol_old = output_tolerance(np, dt, ref, tol)
    t0 = time.perf_counter()
    note = ""
    try:
        value, err = eb.trace(op.reference, np, inputs, float64_inputs=op.float64_inputs)
        assert value.shape == ref.shape and bool(np.all((value == ref) | (np.isnan(ref)))), "trace value"
    except eb.UnsupportedReference as exc:
        note = f"unsupported: {exc}"
        err = None
    t_bound = time.perf_counter() - t0
    fixed = op.ulps * U * np.abs(ref)
    base = output_tolerance(np, dt, ref, fixed)  # the new tolerance at C = 0
    rows = []
    outs: dict[str, Any] = {}
    for name, kind, fn, info in variants:
        if dtype not in info.dtypes:
            continue
        out = np.asarray(fn(*(x.copy() for x in inputs))).reshape(-1).astype(np.float64)
        outs[name] = out
        old = check_output(np, out, ref, tol_old)
        d = np.where(out == ref, 0.0, np.abs(out - ref))
        d = np.where(np.isnan(d), np.inf, d)
        row: dict[str, Any] = {
            "op": op.name,
            "variant": name,
            "kind": kind,
            "dtype": dtype,
            "shape": "x".join(map(str, shape)),
            "seed": seed,
            "n_out": int(ref.size),
            "old_ok": old.ok,
            "old_wrong": old.wrong,
            "old_ratio": float(np.max(d / tol_old)),
            "max_err": float(d.max()),
            "t_ref": t_ref,
            "t_bound": t_bound,
            "note": note,
        }
        if err is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                need = np.where(d > base, (d - base) / err, 0.0)
            row["c_need"] = float(np.max(need)) if need.size else 0.0
            row["wrong_at"] = {str(c): int((d > base + c * err).sum()) for c in C_GRID}
            with np.errstate(divide="ignore", invalid="ignore"):
                row["ratio_at"] = {
                    str(c): float(np.max(np.where(d > 0, d / (base + c * err), 0.0))) for c in C_GRID
                }
            raw = np.where(err > 0, d / np.where(err > 0, err, 1.0), np.where(d > 0, np.inf, 0.0))
            row["raw_ratio"] = float(raw.max())  # |err| / bound, no fixed part (float32 mostly)
            tol_new = output_tolerance(np, dt, ref, np.maximum(3.0 * err + fixed, 1e-30))
            new = check_output(np, out, ref, tol_new)
            row["new3_ok"], row["new3_wrong"] = new.ok, new.wrong
        rows.append(row)
    worst_correct = max((r["max_err"] for r in rows if r["kind"] == "correct"), default=0.0)
    for r in rows:
        r["vs_correct"] = r["max_err"] / worst_correct if worst_correct > 0 else math.inf
        r["inactive"] = bool(
            r["kind"] == "bug" and np.array_equal(outs[r["variant"]], outs.get("blocked", outs.get("np32")))
        )
    return rows


def run(args: argparse.Namespace) -> None:
    if args.no_exp_arg:
        elementwise.EXP_ARG = 0.0
    out_path = HERE / ("verdicts_noexparg.jsonl" if args.no_exp_arg else "verdicts.jsonl")
    ops = sorted(p.parent for p in CORPUS.glob("*/op.py"))
    if args.ops:
        ops = [p for p in ops if p.name in args.ops.split(",")]
    with out_path.open("w") as sink:
        for folder in ops:
            op, variants = load_op(folder)
            for shape in SHAPES.get(folder.name, ROWS):
                size = max(math.prod(op.tensor_shape(t, shape)) for t in op.inputs)
                if args.quick and size > QUICK_MAX:
                    continue
                seeds = range(SEEDS_SMALL) if size <= SMALL else range(1)
                dtypes = ("float32", "float16", "bfloat16")
                if size > BIG:
                    dtypes = ("float32", "bfloat16") if folder.name in BIG_16 else ("float32",)
                for dtype in dtypes:
                    for s in seeds:
                        seed = zlib.crc32(f"{folder.name}/{shape}/{dtype}/{s}".encode())
                        t0 = time.perf_counter()
                        for row in evaluate_case(op, variants, shape, dtype, seed):
                            sink.write(json.dumps(row) + "\n")
                        sink.flush()
                    print(f"{folder.name} {shape} {dtype}: {time.perf_counter() - t0:.1f}s", flush=True)


def report(args: argparse.Namespace) -> None:
    c = args.c
    rows = [json.loads(line) for line in (HERE / args.file).open()]
    if args.ops:
        rows = [r for r in rows if r["op"] in args.ops.split(",")]
    ck = str(c) if str(c) in {str(x) for x in C_GRID} else None

    def new_ok(r: dict[str, Any]) -> bool:
        return r.get("c_need", math.inf) < c

    # 1. correct variants: false FAILs, old and new, per op
    print(f"## Correct variants: false FAILs (old rule vs new, C = {c})\n")
    print(
        "| op | cases | old FAIL cases | old wrong outputs | new FAIL cases | max c_need (f32) "
        "| max c_need (16-bit) | worst new err/tol (f32) | worst, any dtype |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for op in sorted({r["op"] for r in rows}):
        rs = [r for r in rows if r["op"] == op and r["kind"] == "correct"]
        f32 = [r.get("c_need", math.inf) for r in rs if r["dtype"] == "float32"]
        f16 = [r.get("c_need", math.inf) for r in rs if r["dtype"] != "float32"]
        margin = max(_ratio_at(r, c) for r in rs)
        margin32 = max(_ratio_at(r, c) for r in rs if r["dtype"] == "float32")
        print(
            f"| {op} | {len(rs)} | {sum(not r['old_ok'] for r in rs)} | "
            f"{sum(r['old_wrong'] for r in rs)} | {sum(not new_ok(r) for r in rs)} | "
            f"{max(f32):.3g} | {max(f16):.3g} | {margin32:.3g} | {margin:.3g} |"
        )
    # 1b. the choice of C
    print("\n## The safety factor C: false FAILs and catches\n")
    n_cor = sum(r["kind"] == "correct" for r in rows)
    n32 = sum(r["kind"] == "bug" and not r["inactive"] and r["dtype"] == "float32" for r in rows)
    n16 = sum(r["kind"] == "bug" and not r["inactive"] and r["dtype"] != "float32" for r in rows)
    print(
        f"| C | correct cases FAILing (of {n_cor}) | worst f32 correct err/tol | planted cases "
        f"caught, float32 (of {n32} active) | planted cases caught, 16-bit (of {n16} active) |"
    )
    print("|---|---|---|---|---|")
    for cc in (1.0, 1.5, 2.0, 3.0, 4.0, 6.0):
        cor = [r for r in rows if r["kind"] == "correct"]
        worst32 = max(_ratio_at(r, cc) for r in cor if r["dtype"] == "float32")
        bugs = [r for r in rows if r["kind"] == "bug" and not r["inactive"]]
        b32 = sum(r.get("c_need", math.inf) >= cc for r in bugs if r["dtype"] == "float32")
        b16 = sum(r.get("c_need", math.inf) >= cc for r in bugs if r["dtype"] != "float32")
        fails = sum(r.get("c_need", math.inf) >= cc for r in cor)
        print(f"| {cc:g} | {fails} | {worst32:.3g} | {b32} | {b16} |")
    old32 = [r for r in rows if r["kind"] == "bug" and not r["inactive"] and r["dtype"] == "float32"]
    old16 = [r for r in rows if r["kind"] == "bug" and not r["inactive"] and r["dtype"] != "float32"]
    print(
        f"| old rule | {sum(not r['old_ok'] for r in rows if r['kind'] == 'correct')} | "
        f"{max(r['old_ratio'] for r in rows if r['kind'] == 'correct' and r['dtype'] == 'float32'):.3g} | "
        f"{sum(not r['old_ok'] for r in old32)} | {sum(not r['old_ok'] for r in old16)} |"
    )
    # 2. planted faults
    print(f"\n## Planted faults: caught (FAIL) at C = {c}, by shape and dtype\n")
    print(
        "Each cell, one per shape: F = FAIL (caught; i/jF: in i of j seeds), - = the fault "
        "is inactive (its outputs are the correct kernel's), ~ = passed, and the fault's "
        "max |err| is at most 2x the worst correct variant's (within rounding), ok(k) = "
        "passed with a max |err| k times the worst correct variant's (a miss).\n"
    )
    print("| op | fault | float32 | float16 | bfloat16 |\n|---|---|---|---|---|")
    keyed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["kind"] == "bug":
            keyed.setdefault((r["op"], r["variant"]), []).append(r)
    for (op, variant), rs in sorted(keyed.items()):
        shapes = list(dict.fromkeys(r["shape"] for r in rs))
        cells = []
        for dtype in ("float32", "float16", "bfloat16"):
            parts = []
            for shape in shapes:
                sel = [r for r in rs if r["shape"] == shape and r["dtype"] == dtype]
                if not sel:
                    continue
                if all(r["inactive"] for r in sel):
                    parts.append("-")
                    continue
                caught = sum(not new_ok(r) for r in sel if not r["inactive"])
                live = sum(not r["inactive"] for r in sel)
                k = max(r["vs_correct"] for r in sel)
                if caught == live:
                    parts.append("F")
                elif k <= 2:
                    parts.append("~" if caught == 0 else f"{caught}/{live}F~")
                else:
                    parts.append(f"ok({k:.2g})" if caught == 0 else f"{caught}/{live}F")
            cells.append(" ".join(parts) if parts else "n/a")
        print(f"| {op} | {variant} | " + " | ".join(cells) + " |")
    print(
        "\nshapes, in order: "
        + "; ".join(
            f"{op}: {' '.join(dict.fromkeys(r['shape'] for r in rows if r['op'] == op))}"
            for op in sorted({r["op"] for r in rows})
        )
    )
    # 3. alternatives, informative
    alts = [r for r in rows if r["kind"] == "alt"]
    if alts:
        print("\n## Other formulas (informative)\n")
        for key in sorted({(r["op"], r["variant"], r["dtype"]) for r in alts}):
            sel = [r for r in alts if (r["op"], r["variant"], r["dtype"]) == key]
            fails = [r["shape"] for r in sel if not new_ok(r)]
            print(
                f"- {key[0]} {key[1]} {key[2]}: FAIL at {sorted(set(fails)) or 'none'} "
                f"(max c_need {max(r.get('c_need', 0) for r in sel):.3g})"
            )
    # 4. cost
    print("\n## Cost: the bound's time over the reference's (Op.expected), per op, largest shape\n")
    for op in sorted({r["op"] for r in rows}):
        rs = [r for r in rows if r["op"] == op and r["dtype"] == "float32"]
        big = max(rs, key=lambda r: r["n_out"] * 0 + _size(r["shape"]))
        print(
            f"- {op} {big['shape']}: reference {big['t_ref']:.3f} s, bound {big['t_bound']:.3f} s "
            f"({big['t_bound'] / max(big['t_ref'], 1e-9):.1f}x)"
        )
    notes = {r["note"] for r in rows if r["note"]}
    if notes:
        print("\nnotes: " + "; ".join(sorted(notes)))
    _ = ck


def _size(shape: str) -> int:
    return math.prod(int(s) for s in shape.split("x"))


def _ratio_at(r: dict[str, Any], c: float) -> float:
    """Worst |err| / tol at this C (the tolerance base + C * bound)."""
    return float(r.get("ratio_at", {}).get(str(c), math.inf))


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--quick", action="store_true")
    r.add_argument("--no-exp-arg", action="store_true")
    r.add_argument("--ops", default="")
    p = sub.add_parser("report")
    p.add_argument("--c", type=float, default=3.0)
    p.add_argument("--file", default="verdicts.jsonl")
    p.add_argument("--ops", default="")
    args = parser.parse_args()
    run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    main()
