"""Does a kernel take the arguments its op passes? Each entry point's parameter count, read
from the PTX nvcc emits for the variant (no GPU), against the op's argument list
(`cudabench.op.Op.arg_names`): the op's ABI is the user's, so a kernel written for another
list would otherwise read garbage, or crash, only on a GPU. `cudabench check` runs it.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cudabench.build.compile import (
    COMPILE_TIMEOUT_S,
    CompileError,
    NvccMissing,
    _wrapper,
    lowered_names,
    nvcc_path,
    param_defines,
)
from cudabench.core.dtypes import get_dtype
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import KernelVariant
from cudabench.ops.header import instantiate

_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.DOTALL)


def ptx_parameters(ptx: str) -> dict[str, int]:
    """Each `.entry` of a PTX file and how many `.param`s it declares."""
    return {name: params.count(".param") for name, params in _ENTRY.findall(ptx)}


def entry_parameters(variant: KernelVariant, dtype: str, arch: str = "sm_80") -> dict[str, int]:
    """Each launch's entry (as the header writes it) -> its parameter count, from nvcc -ptx.
    CompileError with nvcc's diagnostics if the file does not compile."""
    element = get_dtype(dtype)
    entries = [instantiate(launch.entry, element.ctype) for launch in variant.launches]
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
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise CompileError(f"{variant.path}: nvcc -ptx ran past {COMPILE_TIMEOUT_S} s") from exc
        except OSError as exc:
            raise NvccMissing(f"{cmd[0]}: cannot run: {exc.strerror}") from exc
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            raise CompileError("\n".join(lines[:12]) or "nvcc -ptx failed without a message")
        counts = ptx_parameters(out.read_text())
    lowered = lowered_names(entries, list(counts), f"{variant.path}:{variant.header_line}")
    return {launch.entry: counts[lowered[e]] for launch, e in zip(variant.launches, entries)}


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


def argument_problems(variant: KernelVariant, op: Any, dtype: str, arch: str = "sm_80") -> list[str]:
    """One line per entry whose parameter count is not the op's argument count, naming the
    file and the kernel's line. An op without an argument list by name (not a
    cudabench.op.Op) is not checked."""
    if not hasattr(op, "arg_names") or variant.kind != "cuda":
        return []
    names = op.arg_names()
    problems = []
    for entry, count in entry_parameters(variant, dtype, arch).items():
        if count != len(names):
            line = definition_line(variant.path, entry) or variant.header_line
            problems.append(
                f"{variant.path}:{line}: {entry} takes {count} parameters, but "
                f"{op.name} passes {len(names)}: ({', '.join(names)})"
            )
    return problems


def check_all(pairs: list[tuple[Any, KernelVariant]], arch: str, workers: int) -> list[str]:
    """argument_problems for each (op, variant), in threads (each waits on its nvcc), at the
    variant's first dtype. A file that does not compile is left to the compile check."""
    from concurrent.futures import ThreadPoolExecutor

    def one(op: Any, variant: KernelVariant) -> list[str]:
        try:
            return argument_problems(variant, op, variant.dtypes[0], arch)
        except NvccMissing:
            raise
        except CompileError:
            return []

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(one, op, v) for op, v in pairs if v.kind == "cuda"]
        return [line for future in futures for line in future.result()]
