"""Is every built-in kernel's PTX at its default configuration the same as at another commit?

    git worktree add /tmp/old <rev> && python scripts/ptx_same.py /tmp/old [--ops FOLDER]

Compiles each (op, variant, dtype) for sm_90 with nvcc -ptx in both trees (both with this
tree's header parameter definitions) and compares the PTX without comments, .file/.loc lines
and the path-dependent hashes nvcc puts in internal symbol names. A kernel refactor that
prints SAME everywhere changes no instruction the GPU runs. Needs nvcc, no GPU.
"""

from __future__ import annotations

import concurrent.futures
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cudabench.build.compile import _wrapper, param_defines  # noqa: E402
from cudabench.core.dtypes import get_dtype  # noqa: E402
from cudabench.ops.discovery import BUILTIN_KERNELS, discover  # noqa: E402
from cudabench.ops.header import instantiate  # noqa: E402
from cudabench.ops.registry import all_ops, use_ops  # noqa: E402


def ptx(root: Path, variant, dtype: str, defines: list[str], folder: Path = BUILTIN_KERNELS) -> str:
    """`folder`: where the variant's ops live in this tree (the catalogue, or --ops FOLDER)."""
    element = get_dtype(dtype)
    source = root / folder.relative_to(ROOT) / Path(variant.path).relative_to(folder)
    entries = [instantiate(launch.entry, element.ctype) for launch in variant.launches]
    with tempfile.TemporaryDirectory() as tmp:
        target = source
        if any("<" in e for e in entries):
            target = Path(tmp) / "wrapper.cu"
            target.write_text(_wrapper(source.resolve(), entries))
        out = Path(tmp) / "k.ptx"
        proc = subprocess.run(
            [
                "nvcc",
                "-ptx",
                "-arch=sm_90",
                "-O3",
                "-std=c++17",
                *element.defines,
                *defines,
                f"-I{root / 'kernels'}",
                f"-I{source.parent}",
                "-o",
                str(out),
                str(target),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode:
            return "ERROR " + proc.stderr[-300:]
        text = out.read_text()
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith(("//", ".file", ".loc"))]
    return re.sub(r"_(INTERNAL|GLOBAL__N)_\w+?_cu_[0-9a-f]+", "_X", "\n".join(lines))


def main() -> int:
    old = Path(sys.argv[1])
    # --ops FOLDER: the CUDA variants of the ops in that folder of both trees (tests/corpus)
    folder = (
        (ROOT / sys.argv[sys.argv.index("--ops") + 1]).resolve() if "--ops" in sys.argv else BUILTIN_KERNELS
    )
    if folder != BUILTIN_KERNELS:
        use_ops([folder])
    jobs = [
        (op, v, d)
        for op in all_ops()
        for v in discover(op, [folder])[0]
        if v.kind == "cuda" and Path(v.path).resolve().is_relative_to(folder)
        for d in v.dtypes
    ]

    def compare(job):
        op, variant, dtype = job
        # both trees at this tree's header defaults: a kernel compiled without them falls back
        # to its .cuh's own #ifndef values, which need not be the header's first ones
        defines = param_defines(variant)
        same = ptx(old, variant, dtype, defines, folder) == ptx(ROOT, variant, dtype, defines, folder)
        return f"{op} {variant.name} {dtype}: {'SAME' if same else 'DIFFERENT'}", same

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(compare, jobs))
    for line, _ in results:
        print(line)
    print(f"{sum(s for _, s in results)} of {len(results)} the same")
    return 0 if all(s for _, s in results) else 1


if __name__ == "__main__":
    sys.exit(main())
