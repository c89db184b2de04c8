"""A variant -> a cached cubin and ptxas's resource report, through nvcc (nvcc.py: finding,
running and reading it). Needs no GPU.

A variant compiles once per (arch, dtype): `-DCB_T=<C++ type>` gives the file its element type
(kernels/common/dtype.cuh names it `elem_t`). A header entry may be a template instantiation
(`ReduceScaleBlockKernel<T, long long>`, `T` the dtype's type): cudabench compiles a two-line
wrapper that includes the file and takes the instantiation's address, so nvcc emits it, then
finds its lowered (mangled) name among the entries ptxas reports by demangling them
(cu++filt, or binutils' c++filt), never by asking the user for a mangled name.

A variant with a tunable space (`params:`) compiles once per configuration too: each parameter
is a definition, `-DBLOCK=256`. A cubin is cached under `$CUDABENCH_CACHE` (default
`~/.cache/cudabench`) by the hash of the source, every header in `kernels/common/`, the `*.cuh`
headers beside the source and in the folder above it (an ops folder's own shared headers), the
target arch, the dtype, the entries, the flags (the definitions among them) and nvcc's
version, so editing a kernel or a header it may include recompiles and nothing else does.
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
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudabench.build.nvcc import (
    COMPILE_TIMEOUT_S,
    NVCC_FLAGS,
    CompileError,
    EntryResources,
    NvccMissing,
    ToolchainError,
    diagnostics,
    lowered_names,
    nvcc_path,
    nvcc_version,
    parse_ptxas,
    run_nvcc,
)
from cudabench.core.dtypes import get_dtype
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import KernelVariant
from cudabench.ops.header import instantiate


@dataclass(frozen=True)
class Compiled:
    cubin: Path
    arch: str
    resources: dict[str, EntryResources]  # by lowered name, as ptxas reports them
    names: tuple[str, ...]  # the cubin's (lowered) name of each launch's entry, in order

    @property
    def launch_resources(self) -> list[EntryResources]:
        return [self.resources[name] for name in self.names]


def cache_dir() -> Path:
    return Path(os.environ.get("CUDABENCH_CACHE", Path.home() / ".cache" / "cudabench"))


def _common_headers_digest() -> str:
    return _headers_digest(tuple((h.name, h) for h in sorted((BUILTIN_KERNELS / "common").glob("*.cuh"))))


def _local_headers_digest(source: Path) -> str:
    """The `*.cuh` files beside a variant and in the folder above it: the headers it may
    include by a relative path (`#include "rows.cuh"`, `#include "../rows.cuh"`)."""
    folder = source.resolve().parent
    return _headers_digest(
        tuple(
            (f"{level}/{header.name}", header)
            for level, place in enumerate(dict.fromkeys((folder, folder.parent)))
            for header in sorted(place.glob("*.cuh"))
        )
    )


def _headers_digest(headers: tuple[tuple[str, Path], ...]) -> str:
    """The hash of these headers' names (as labelled) and contents. The contents are read
    again only when a file's size or modification time changed: a search looks its
    configurations' cubins up hundreds of times a second (on an H200 a configuration's set-up
    went from 5 ms to 2 ms when the headers were no longer read each time)."""
    stats = []
    for label, path in headers:
        st = path.stat()
        stats.append((label, str(path), st.st_mtime_ns, st.st_size))
    return _read_digest(tuple(stats))


@functools.lru_cache(maxsize=256)
def _read_digest(stats: tuple[tuple[str, str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for label, path, _, _ in stats:
        digest.update(label.encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def _cached_report(path: Path) -> dict[str, EntryResources] | None:
    """A cached ptxas report, or None when it is missing or damaged (then: compile again)."""
    try:
        raw = json.loads(path.read_text())
        return {name: EntryResources(**vals) for name, vals in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _wrapper(source: Path, entries: list[str]) -> str:
    """A file that includes the variant and takes the address of each template entry, so
    nvcc instantiates and emits them."""
    lines = [f'#include "{source}"', "// cudabench: instantiate the header's template entries"]
    lines += [
        f"static void* const cudabench_entry_{i} = (void*)&{e};" for i, e in enumerate(entries) if "<" in e
    ]
    return "\n".join(lines) + "\n"


def param_defines(variant: KernelVariant) -> list[str]:
    """The configuration's parameters as nvcc definitions: -DBLOCK=256 -DITEMS=8."""
    return [f"-D{name}={value}" for name, value in variant.values]


def cache_key(variant: KernelVariant, arch: str, dtype: str) -> str:
    """The compile cache's key of one (variant configuration, arch, dtype): the hash of the
    source, every header in kernels/common/ and the `.cuh` files beside it (and in the folder
    above), the arch, the flags (the dtype's and the
    configuration's definitions among them), nvcc's version and the entries. A cached cubin
    is `<key>.cubin`, ptxas's report `<key>.json`, the entries' parameters
    `<key>.params.json`."""
    return cache_keys([variant], arch, dtype)[0]


def cache_keys(variants: Sequence[KernelVariant], arch: str, dtype: str) -> list[str]:
    """cache_key of each variant, each source file and its headers read and hashed once: a
    search's round asks for hundreds of configurations of one file at once."""
    element = get_dtype(dtype)
    heads: dict[str, Any] = {}  # path -> the hash of what every configuration of it shares
    keys = []
    for variant in variants:
        head = heads.get(variant.path)
        if head is None:
            source = Path(variant.path).read_text()
            shared = [source, _common_headers_digest(), _local_headers_digest(Path(variant.path)), arch]
            head = heads[variant.path] = hashlib.sha256("\0".join([*shared, ""]).encode())
        entries = [instantiate(launch.entry, element.ctype) for launch in variant.launches]
        flags = [*NVCC_FLAGS, *element.defines, *param_defines(variant)]
        digest = head.copy()
        digest.update("\0".join([" ".join(flags), nvcc_version(), *entries]).encode())
        keys.append(digest.hexdigest()[:24])
    return keys


def uncompiled(variants: Sequence[KernelVariant], arch: str, dtype: str) -> list[KernelVariant]:
    """The variants whose cubin (and ptxas report) the cache lacks: what nvcc has to compile.
    0.04 ms a configuration, against 0.3 ms for compile_variant's own look-up (2-core host)."""
    folder = cache_dir()
    keys = cache_keys(variants, arch, dtype)
    return [v for v, key in zip(variants, keys) if not all(f.exists() for f in _cached_files(folder, key))]


def _cached_files(folder: Path, key: str) -> tuple[Path, Path]:
    """A configuration's cubin and ptxas report in the compile cache."""
    return folder / f"{key}.cubin", folder / f"{key}.json"


# A PTX entry's parameter list: `.param .u64 k_param_0`, `.param .align 8 .b8 k_param_3[16]`
_PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.DOTALL)
_PTX_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)(?:\s+\.ptr[^,]*?)?\s+[\w$]+(?:\[(\d+)\])?")


def ptx_parameters(ptx: str) -> dict[str, tuple[str, ...]]:
    """Each `.entry` of a PTX file and its parameters' PTX types, in order: `u64` (a pointer
    or a 64-bit integer: PTX does not tell them apart), `u32`/`s32`, `f32`, `f64`, or
    `b8[16]` for a 16-byte value (a struct)."""
    found = {}
    for name, params in _PTX_ENTRY.findall(ptx):
        kinds = []
        for kind, count in _PTX_PARAM.findall(params):
            kinds.append(f"{kind}[{count}]" if count else kind)
        found[name] = tuple(kinds)
    return found


def cached_parameters(key: str) -> dict[str, tuple[str, ...]] | None:
    """The entries' parameters kept beside a cubin (`<key>.params.json`), or None."""
    try:
        raw = json.loads((cache_dir() / f"{key}.params.json").read_text())
        return {str(name): tuple(str(k) for k in kinds) for name, kinds in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def store_parameters(key: str, params: dict[str, tuple[str, ...]]) -> None:
    """Keep the entries' parameters beside the cubin (write, then rename). OSError."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{key}.{os.getpid()}.{threading.get_ident()}.params.json"
    tmp.write_text(json.dumps({name: list(kinds) for name, kinds in params.items()}))
    os.replace(tmp, folder / f"{key}.params.json")


def compile_variant(variant: KernelVariant, arch: str, dtype: str = "float32") -> Compiled:
    """Compile one variant's file for `arch` (e.g. sm_90) and `dtype` to a cached cubin.
    Raises CompileError with nvcc's diagnostics, or when an entry the header names is missing
    (a template instantiation that does not exist is nvcc's error, naming it)."""
    element = get_dtype(dtype)
    if variant.kind != "cuda":
        raise CompileError(f"{variant.path}: {variant.name} is a Python variant: nothing to compile")
    if dtype not in variant.dtypes:
        raise CompileError(
            f"{variant.path}: variant {variant.name!r} is for {', '.join(variant.dtypes)}, not {dtype}"
        )
    entries = [instantiate(launch.entry, element.ctype) for launch in variant.launches]
    flags = [*NVCC_FLAGS, *element.defines, *param_defines(variant)]
    key = cache_key(variant, arch, dtype)
    folder = cache_dir()
    cubin, report_file = _cached_files(folder, key)
    resources = _cached_report(report_file) if cubin.exists() else None
    if resources is None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolchainError(
                f"compile cache {folder}: cannot create it ({exc.strerror}); "
                "set CUDABENCH_CACHE to a writable folder"
            ) from exc
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "k.cubin"
            target = Path(variant.path).resolve()
            if any("<" in e for e in entries):
                target = Path(tmp) / f"{Path(variant.path).stem}.instantiate.cu"
                target.write_text(_wrapper(Path(variant.path).resolve(), entries))
            kept = Path(tmp) / "keep"  # nvcc's intermediate files: the PTX, for its parameters
            kept.mkdir()
            cmd = [
                nvcc_path(),
                "-cubin",
                f"-arch={arch}",
                *flags,
                "-keep",
                f"-keep-dir={kept}",
                f"-I{BUILTIN_KERNELS}",
                f"-I{Path(variant.path).resolve().parent}",
                "-o",
                str(out),
                str(target),
            ]
            try:
                returncode, stdout, stderr = run_nvcc(cmd)
            except subprocess.TimeoutExpired as exc:
                raise CompileError(f"{variant.path}: nvcc ran past {COMPILE_TIMEOUT_S} s") from exc
            except OSError as exc:  # nvcc vanished or cannot be executed
                raise NvccMissing(f"{cmd[0]}: cannot run: {exc.strerror}") from exc
            if returncode != 0:
                config = f" [{variant.params_text}]" if variant.values else ""
                raise CompileError(diagnostics(stderr) + config)
            if not out.is_file():  # exit 0 and no cubin: not nvcc (a wrapper, a wrong path)
                said = " | ".join(ln.strip() for ln in (stdout + stderr).splitlines() if ln.strip())
                raise ToolchainError(
                    f"{cmd[0]} exited 0 but wrote no cubin (is it nvcc? set CUDABENCH_NVCC to "
                    f"the CUDA toolkit's nvcc){': ' + said[:160] if said else ''}"
                )
            resources = parse_ptxas(stderr + stdout)
            # write-then-rename: a concurrent or killed compile never leaves half a cubin
            try:
                tmp_cubin = folder / f".{key}.{os.getpid()}.cubin"
                shutil.copyfile(out, tmp_cubin)
                os.replace(tmp_cubin, cubin)
                tmp_report = folder / f".{key}.{os.getpid()}.json"
                tmp_report.write_text(json.dumps({k: vars(v) for k, v in resources.items()}))
                os.replace(tmp_report, report_file)
                ptx = sorted(kept.glob("*.ptx"))
                if ptx:  # what `check` compares with the op's arguments, learnt for free
                    store_parameters(key, ptx_parameters(ptx[0].read_text()))
            except OSError as exc:
                raise ToolchainError(
                    f"compile cache {folder}: cannot write ({exc.strerror}); "
                    "set CUDABENCH_CACHE to a writable folder"
                ) from exc
    try:
        lowered = lowered_names(entries, list(resources), f"{variant.path}:{variant.header_line}")
    except CompileError as exc:
        raise type(exc)(f"{exc} [{dtype}]") from None
    return Compiled(cubin=cubin, arch=arch, resources=resources, names=tuple(lowered[e] for e in entries))
