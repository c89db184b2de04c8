"""Does a kernel take the arguments its op passes? Each entry point's parameters, read from
the PTX nvcc emits for the variant (no GPU), against the op's argument list
(`cudabench.op.Op.arg_names`, each argument's role and C type): the op's ABI is the user's,
so a kernel written for another list would otherwise read garbage, or crash, only on a GPU.
`cudabench check` runs it.

What the PTX says of a parameter is its size and kind: `.u64` (a pointer, or a 64-bit
integer: PTX does not tell them apart), `.u32`/`.s32` (a 32-bit integer), `.f32`, `.f64`, or
a block of bytes (a struct). So the count is compared, then each parameter's kind against what
the op passes there: a pointer for a tensor or workspace, a scalar's C type (ops/declarations.py
CTYPES). Arguments in another order than the kernel's are caught where the kinds differ (an
`int n` where the kernel takes a pointer); two pointers swapped are not (the emulated run of
an op with its own `args` order is tests/test_issue_46.py's).

The parameters are learnt once per compile: compile.py keeps nvcc's PTX of each fresh compile
and stores its parameters beside the cubin (`<key>.params.json`, the compile cache's key); a
cubin cached without them (an older cudabench's) gets one `nvcc -ptx`, stored the same way. A
warm `check` runs no nvcc at all.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from cudabench.build.compile import (
    _wrapper,
    cache_key,
    cached_parameters,
    param_defines,
    ptx_parameters,
    store_parameters,
)
from cudabench.build.nvcc import (
    COMPILE_TIMEOUT_S,
    CompileCancelled,
    CompileError,
    NvccMissing,
    cancel_compiles,
    interruptible,
    lowered_names,
    nvcc_path,
    run_nvcc,
)
from cudabench.core.dtypes import get_dtype
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import KernelVariant
from cudabench.ops.header import instantiate

__all__ = ["argument_problems", "check_all", "definition_line", "entry_parameters", "ptx_parameters"]


def _ptx_of(variant: KernelVariant, dtype: str, arch: str, entries: list[str]) -> str:
    """nvcc -ptx of the variant (its configuration's definitions, the dtype's type)."""
    element = get_dtype(dtype)
    source = Path(variant.path).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        target = source
        if any("<" in e for e in entries):
            target = Path(tmp) / f"{source.stem}.instantiate.cu"
            target.write_text(_wrapper(source, entries))
        out = Path(tmp) / "k.ptx"
        cmd = [
            nvcc_path(),
            "-ptx",
            f"-arch={arch}",
            "-O3",
            "-std=c++17",
            *element.defines,
            *param_defines(variant),
            f"-I{BUILTIN_KERNELS}",
            f"-I{source.parent}",
            "-o",
            str(out),
            str(target),
        ]
        try:
            returncode, _, stderr = run_nvcc(cmd)
        except subprocess.TimeoutExpired as exc:
            raise CompileError(f"{variant.path}: nvcc -ptx ran past {COMPILE_TIMEOUT_S} s") from exc
        except OSError as exc:
            raise NvccMissing(f"{cmd[0]}: cannot run: {exc.strerror}") from exc
        if returncode != 0:
            lines = [ln for ln in stderr.splitlines() if ln.strip()]
            raise CompileError("\n".join(lines[:12]) or "nvcc -ptx failed without a message")
        return out.read_text()


def entry_parameters(variant: KernelVariant, dtype: str, arch: str = "sm_80") -> dict[str, tuple[str, ...]]:
    """Each launch's entry (as the header writes it) -> its parameters' PTX types, in order
    (compile.ptx_parameters): from the compile cache when nvcc's PTX of this compile was kept,
    else from nvcc -ptx (then kept). CompileError with nvcc's diagnostics if the file does
    not compile; CompileCancelled after cancel_compiles."""
    element = get_dtype(dtype)
    entries = [instantiate(launch.entry, element.ctype) for launch in variant.launches]
    key = cache_key(variant, arch, dtype)
    params = cached_parameters(key)
    if params is None:
        params = ptx_parameters(_ptx_of(variant, dtype, arch, entries))
        try:
            store_parameters(key, params)
        except OSError:
            pass  # an unwritable cache only costs the next check this nvcc run
    lowered = lowered_names(entries, list(params), f"{variant.path}:{variant.header_line}")
    return {launch.entry: params[lowered[e]] for launch, e in zip(variant.launches, entries)}


def definition_line(path: str, entry: str) -> int | None:
    """The line of the file where the entry's name opens its parameter list (its
    definition), or None."""
    bare = entry.split("<")[0].strip()
    pattern = re.compile(rf"\b{re.escape(bare)}\s*\(")
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(lines, 1):
        if pattern.search(line) and not line.lstrip().startswith("//"):
            return number
    return None


# What a parameter is, by its PTX type (the kernel's side) ...
_PTX_KINDS = {
    "u64": "b64",
    "s64": "b64",
    "b64": "b64",
    "u32": "i32",
    "s32": "i32",
    "b32": "i32",
    "f32": "f32",
    "f64": "f64",
}
# ... and by the C type the op passes (a pointer for every array)
_NUMPY_KINDS = {
    np.dtype(np.int32): "i32",
    np.dtype(np.uint32): "i32",
    np.dtype(np.int64): "b64",
    np.dtype(np.uint64): "b64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}
_SAID = {
    "b64": "a pointer or a 64-bit integer",
    "i32": "a 32-bit integer",
    "f32": "a float",
    "f64": "a double",
}


def _kernel_kind(ptx_type: str) -> str:
    return _PTX_KINDS.get(ptx_type, ptx_type)


def _kernel_said(ptx_type: str) -> str:
    kind = _kernel_kind(ptx_type)
    if kind in _SAID:
        return f"{_SAID[kind]} (.{ptx_type})"
    if ptx_type.startswith("b8["):
        return f"a {ptx_type[3:-1]}-byte value"
    return f".{ptx_type}"


def passed_kinds(op: Any) -> list[tuple[str, str, str]]:
    """(name, kind, what it is) of each argument the op passes, in order: a pointer for an
    input, output, workspace; a scalar's or a grid rule's scalar's C type. Kind '' where the
    op does not say (an argument the checks cannot place)."""
    roles = op.arg_roles() if hasattr(op, "arg_roles") else [("", n) for n in op.arg_names()]
    scalars = {s.name: s for s in (*getattr(op, "scalars", ()), *getattr(op, "rule_scalars", ()))}
    from cudabench.ops.declarations import CTYPES

    found = []
    for role, name in roles:
        if role in ("input", "output", "inplace", "workspace"):
            found.append((name, "b64", f"a pointer (its {role} {name})"))
        elif name in scalars and scalars[name].ctype in CTYPES:
            ctype = scalars[name].ctype
            kind = _NUMPY_KINDS.get(np.dtype(CTYPES[ctype]), "")
            found.append((name, kind, f"{ctype} {name}"))
        else:
            found.append((name, "", name))
    return found


def argument_problems(variant: KernelVariant, op: Any, dtype: str, arch: str = "sm_80") -> list[str]:
    """One line per entry whose parameters are not the op's arguments: another count, or the
    first parameter whose kind (pointer or 64-bit integer, 32-bit integer, float, double)
    is not what the op passes there, naming the file and the kernel's line. An op without an
    argument list by name (not a cudabench.op.Op) is not checked."""
    if not hasattr(op, "arg_names") or variant.kind != "cuda":
        return []
    names = op.arg_names()
    passed = passed_kinds(op)
    problems = []
    for entry, params in entry_parameters(variant, dtype, arch).items():
        line = definition_line(variant.path, entry) or variant.header_line
        where = f"{variant.path}:{line}"
        default = tuple((name, values[0]) for name, values in variant.params)
        config = f" [{variant.params_text}]" if variant.values != default else ""  # check --all
        if len(params) != len(names):
            problems.append(
                f"{where}: {entry}{config} takes {len(params)} parameters, but "
                f"{op.name} passes {len(names)}: ({', '.join(names)})"
            )
            continue
        for i, (ptx_type, (_, kind, said)) in enumerate(zip(params, passed), 1):
            if kind and _kernel_kind(ptx_type) != kind:
                problems.append(
                    f"{where}: {entry}{config} parameter {i} is {_kernel_said(ptx_type)}, but "
                    f"{op.name} passes {said} there (its arguments, in order: {', '.join(names)})"
                )
                break
    return problems


def check_all(pairs: list[tuple[Any, KernelVariant]], arch: str, workers: int) -> list[str]:
    """argument_problems for each (op, variant), in threads (each waits on its nvcc, if
    any), at the variant's first dtype. A file that does not compile is left to the compile
    check. Ctrl-C stops every nvcc under way (with its children) and the queued ones at once,
    then raises KeyboardInterrupt."""

    def one(op: Any, variant: KernelVariant) -> list[str]:
        try:
            return argument_problems(variant, op, variant.dtypes[0], arch)
        except (NvccMissing, CompileCancelled):
            raise
        except CompileError:
            return []

    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        with interruptible():
            try:
                futures = [pool.submit(one, op, v) for op, v in pairs if v.kind == "cuda"]
                return [line for future in futures for line in future.result()]
            except (KeyboardInterrupt, CompileCancelled):
                cancel_compiles()
                pool.shutdown(wait=True, cancel_futures=True)
                raise KeyboardInterrupt from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
