"""Triton started in a worker before its first Triton variant runs (`--preload triton`).

A process's first Triton kernel pays for Triton itself, whatever the kernel: its driver and
launcher set-up, the compiler's cache key, loading the module. On an H200 machine that was
0.55 s of the first Triton row's set-up in each worker process (2026-11-28; the next shapes
0.002 s), once a GPU: on two GPUs, twice. `warm` pays it in the successor that imports torch
and triton anyway (execution/successors.py), off the rows' time, by compiling and loading a
one-line kernel. It launches nothing (a successor runs no kernel until it is in charge of
its GPU); loading uploads the kernel's few kilobytes of code. Imported only by a worker that
preloads triton (it imports triton and torch).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit  # type: ignore[untyped-decorator]  # triton ships no annotations
def _touch(x_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)


def warm(device: int) -> None:
    """Compile (or find in Triton's cache) and load `_touch` for `device`: no launch."""
    with torch.cuda.device(device):
        x = torch.empty(16, device=f"cuda:{device}")  # an allocation, no kernel
        compiled = _touch.warmup(x, 16, BLOCK=16, grid=(1,))
        init = getattr(compiled, "_init_handles", None)  # the module's load (Triton 3.x)
        if init is not None:
            init()
