"""nvcc -> cubin, with a content-hash cache and ptxas's resource report. Needs no GPU.

A cubin is cached under `$CUDABENCH_CACHE` (default `~/.cache/cudabench`) by the hash of the
source, every header in `kernels/common/`, the target arch, the flags and nvcc's version, so
editing a kernel or a shared header recompiles and nothing else does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cudabench.kernels import BUILTIN_KERNELS
from cudabench.spec import KernelVariant

NVCC_FLAGS = ("-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v")
COMPILE_TIMEOUT_S = 300


class CompileError(RuntimeError):
    """nvcc failed; the message holds its diagnostics (file:line: error ...)."""


class ToolchainError(CompileError):
    """The machine's fault, not the kernel's: no usable nvcc, or a cache that cannot be
    written. Commands report it as one line (exit 2) instead of a row per kernel."""


class NvccMissing(ToolchainError):
    """No nvcc on PATH, or $CUDABENCH_NVCC names no executable."""


@dataclass(frozen=True)
class EntryResources:
    """ptxas's report for one entry point."""

    registers: int
    spill_bytes: int  # spill stores + spill loads
    stack_bytes: int
    shared_bytes: int


@dataclass(frozen=True)
class Compiled:
    cubin: Path
    arch: str
    resources: dict[str, EntryResources]


def nvcc_path() -> str:
    """$CUDABENCH_NVCC, else the nvcc on PATH; NvccMissing (one line) if it cannot run."""
    chosen = os.environ.get("CUDABENCH_NVCC")
    if chosen:
        path = Path(chosen)
        if not path.is_file():
            raise NvccMissing(f"CUDABENCH_NVCC={chosen}: no such file")
        if not os.access(path, os.X_OK):
            raise NvccMissing(f"CUDABENCH_NVCC={chosen}: not executable")
        return chosen
    found = shutil.which("nvcc")
    if not found:
        raise NvccMissing("nvcc not found: install the CUDA toolkit or set CUDABENCH_NVCC")
    return found


@functools.cache
def nvcc_version() -> str:
    """`13.0.88`-style version of the nvcc on PATH, or '' when there is none."""
    try:
        out = subprocess.run(
            [nvcc_path(), "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (NvccMissing, OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else ""


def cache_dir() -> Path:
    return Path(os.environ.get("CUDABENCH_CACHE", Path.home() / ".cache" / "cudabench"))


def _common_headers_digest() -> str:
    digest = hashlib.sha256()
    for header in sorted((BUILTIN_KERNELS / "common").glob("*.cuh")):
        digest.update(header.name.encode())
        digest.update(header.read_bytes())
    return digest.hexdigest()


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(report: str) -> dict[str, EntryResources]:
    """Per-entry registers, spills, stack and static shared memory from `-Xptxas -v` text."""
    found: dict[str, EntryResources] = {}
    current: str | None = None
    stack = spill = 0
    for line in report.splitlines():
        if m := _ENTRY.search(line):
            current, stack, spill = m.group(1), 0, 0
        elif current and (m := _PROPS.search(line)):
            stack, spill = int(m.group(1)), int(m.group(2)) + int(m.group(3))
        elif current and (m := _USED.search(line)):
            smem = int(m.group(2)) if m.group(2) else 0
            found[current] = EntryResources(int(m.group(1)), spill, stack, smem)
            current = None
    return found


def _diagnostics(stderr: str, limit: int = 12) -> str:
    lines = [ln for ln in stderr.splitlines() if "ptxas info" not in ln and ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    return "\n".join(errors[:limit]) or "nvcc failed without a message"


def _cached_report(path: Path) -> dict[str, EntryResources] | None:
    """A cached ptxas report, or None when it is missing or damaged (then: compile again)."""
    try:
        raw = json.loads(path.read_text())
        return {name: EntryResources(**vals) for name, vals in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def compile_variant(variant: KernelVariant, arch: str) -> Compiled:
    """Compile one variant's file for `arch` (e.g. sm_90) to a cached cubin. Raises
    CompileError with nvcc's diagnostics, or when an entry the header names is missing."""
    source = Path(variant.path).read_text()
    key = hashlib.sha256(
        "\0".join(
            [source, _common_headers_digest(), arch, " ".join(NVCC_FLAGS), nvcc_version()]
        ).encode()
    ).hexdigest()[:24]
    folder = cache_dir()
    cubin, report_file = folder / f"{key}.cubin", folder / f"{key}.json"
    resources = _cached_report(report_file) if cubin.exists() else None
    if resources is None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolchainError(f"compile cache {folder}: cannot create it ({exc.strerror}); "
                                 "set CUDABENCH_CACHE to a writable folder") from exc  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "k.cubin"
            cmd = [
                nvcc_path(), "-cubin", f"-arch={arch}", *NVCC_FLAGS,
                f"-I{BUILTIN_KERNELS}", f"-I{Path(variant.path).parent}",
                "-o", str(out), variant.path,
            ]  # fmt: skip
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                raise CompileError(f"{variant.path}: nvcc ran past {COMPILE_TIMEOUT_S} s") from exc
            except OSError as exc:  # nvcc vanished or cannot be executed
                raise NvccMissing(f"{cmd[0]}: cannot run: {exc.strerror}") from exc
            if proc.returncode != 0:
                raise CompileError(_diagnostics(proc.stderr))
            resources = parse_ptxas(proc.stderr + proc.stdout)
            # write-then-rename: a concurrent or killed compile never leaves half a cubin
            try:
                tmp_cubin = folder / f".{key}.{os.getpid()}.cubin"
                shutil.copyfile(out, tmp_cubin)
                os.replace(tmp_cubin, cubin)
                tmp_report = folder / f".{key}.{os.getpid()}.json"
                tmp_report.write_text(json.dumps({k: vars(v) for k, v in resources.items()}))
                os.replace(tmp_report, report_file)
            except OSError as exc:
                raise ToolchainError(f"compile cache {folder}: cannot write ({exc.strerror}); "
                                     "set CUDABENCH_CACHE to a writable folder") from exc  # fmt: skip
    missing = [entry for entry in variant.entries if entry not in resources]
    if missing:
        raise CompileError(
            f"{variant.path}:{variant.header_line}: entry point(s) {missing} named in the header "
            f"are not in the compiled file (found: {sorted(resources) or 'none'}; "
            "declare kernels extern \"C\")"
        )
    return Compiled(cubin=cubin, arch=arch, resources=resources)
