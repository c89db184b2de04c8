"""nvcc itself: where it is and which version, running it (a time-out, Ctrl-C, `check`'s
cancel), and what it reports: ptxas's resources a kernel, the first lines of an error, the
lowered (mangled) name of a template entry (demangled by cu++filt, or binutils' c++filt, never
asked of the user). The errors a compile raises are these. Needs no GPU; compile.py turns a
variant into a cached cubin with it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NVCC_FLAGS = ("-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v")
COMPILE_TIMEOUT_S = 300


class CompileError(RuntimeError):
    """nvcc failed; the message holds its diagnostics (file:line: error ...)."""


class ToolchainError(CompileError):
    """The machine's fault, not the kernel's: no usable nvcc, or a cache that cannot be
    written. Commands report it as one line (exit 2) instead of a row per kernel."""


class NvccMissing(ToolchainError):
    """No nvcc on PATH, or $CUDABENCH_NVCC names no executable."""


class CompileCancelled(Exception):
    """The compile was stopped (Ctrl-C in `check`): no outcome, neither OK nor an error."""


# The nvcc processes under way, so that `cancel_compiles` can stop them (check's Ctrl-C).
_RUNNING: set[subprocess.Popen[str]] = set()
_LOCK = threading.Lock()
_CANCELLED = threading.Event()
_ISOLATE = False  # inside interruptible(): nvcc in its own session


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Compiles started inside (from any thread) run nvcc in its own session, so that a
    terminal's Ctrl-C reaches cudabench alone, not nvcc (which would die mid-compile and read
    as a COMPILE_ERROR); cudabench then calls `cancel_compiles`. Outside, nvcc stays in its
    caller's process group (a worker killed with its group takes its nvcc with it)."""
    global _ISOLATE
    _CANCELLED.clear()
    _ISOLATE = True
    try:
        yield
    finally:
        _ISOLATE = False
        _CANCELLED.clear()  # a cancel ends with the block: later compiles run


def cancel_compiles() -> None:
    """Stop every nvcc under way (with its children: cicc, ptxas) and make the compiles not
    yet started raise CompileCancelled at once."""
    with _LOCK:
        _CANCELLED.set()
        running = list(_RUNNING)
    for proc in running:
        _kill(proc)


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        if _ISOLATE:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def run_nvcc(cmd: list[str]) -> tuple[int, str, str]:
    """Run nvcc; (exit status, stdout, stderr). CompileCancelled after cancel_compiles."""
    if _CANCELLED.is_set():
        raise CompileCancelled(cmd[-1])
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=_ISOLATE,
    )
    with _LOCK:
        _RUNNING.add(proc)
        if _CANCELLED.is_set():
            _kill(proc)
    try:
        try:
            out, errors = proc.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            raise
        except BaseException:
            _kill(proc)
            proc.wait()
            raise
    finally:
        with _LOCK:
            _RUNNING.discard(proc)
    if _CANCELLED.is_set():
        raise CompileCancelled(cmd[-1])
    return proc.returncode, out, errors


@dataclass(frozen=True)
class EntryResources:
    """ptxas's report for one entry point."""

    registers: int
    spill_bytes: int  # spill stores + spill loads
    stack_bytes: int
    shared_bytes: int


def nvcc_path() -> str:
    """$CUDABENCH_NVCC, else the nvcc on PATH; NvccMissing (one line) if it cannot run."""
    chosen = os.environ.get("CUDABENCH_NVCC")
    if chosen:
        path = Path(chosen)
        if path.is_dir():
            raise NvccMissing(
                f"CUDABENCH_NVCC={chosen}: is a folder; name the nvcc program itself (e.g. {path / 'nvcc'})"
            )
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
        out = subprocess.run([nvcc_path(), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (NvccMissing, OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else ""


def gpu_archs() -> tuple[str, ...]:
    """The real architectures this nvcc compiles for (`sm_75`, `sm_80`, ...: its
    `--list-gpu-arch`), or () when nvcc cannot say."""
    try:
        return _gpu_archs(nvcc_path())
    except NvccMissing:
        return ()


@functools.cache
def _gpu_archs(nvcc: str) -> tuple[str, ...]:
    try:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(sorted({f"sm_{m}" for m in re.findall(r"compute_(\d+)", out)}, key=lambda a: int(a[3:])))


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


def diagnostics(stderr: str, limit: int = 12) -> str:
    lines = [ln for ln in stderr.splitlines() if "ptxas info" not in ln and ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines
    return "\n".join(errors[:limit]) or "nvcc failed without a message"


def _demangler() -> str:
    nvcc = Path(nvcc_path())
    for candidate in (nvcc.parent / "cu++filt", shutil.which("cu++filt"), shutil.which("c++filt")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise ToolchainError(
        "a template entry needs cu++filt (CUDA toolkit) or c++filt (binutils) "
        "to find its lowered name; neither was found"
    )


def _bare(demangled: str) -> str:
    """`void ns::k<float, 4>(float const*, int)` -> `ns::k<float,4>`: no return type, no
    parameters, no spaces, so it compares with a header entry written any way."""
    text = demangled.strip()
    if text.endswith(")"):  # drop the parameter list: the balanced (...) at the end
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i]
                break
    if text.startswith("void "):  # a template's demangled name starts with its return type
        text = text[len("void ") :]
    return "".join(text.split())


def lowered_names(entries: list[str], found: list[str], path: str) -> dict[str, str]:
    """Each header entry's name in the cubin: itself when the file declares it extern "C",
    else the reported entry whose demangled name is it (CompileError naming it if none)."""
    lowered = {e: e for e in entries if e in found}
    missing = [e for e in entries if e not in lowered]
    if not missing:
        return lowered
    mangled = [name for name in found if name.startswith("_Z")]
    demangled: dict[str, str] = {}
    if mangled:
        try:
            proc = subprocess.run(
                [_demangler()], input="\n".join(mangled), capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ToolchainError(f"demangling the entries of {path} failed: {exc}") from exc
        demangled = {_bare(d): m for m, d in zip(mangled, proc.stdout.splitlines())}
    for entry in missing:
        match = demangled.get("".join(entry.split()))
        if match is None:
            shown = sorted(demangled) or sorted(found) or ["none"]
            raise CompileError(
                f"{path}: entry point {entry!r} named in the header is not in the compiled file "
                f'(found: {", ".join(shown)}; declare kernels extern "C" or name a '
                "template instantiation that exists)"
            )
        lowered[entry] = match
    return lowered
