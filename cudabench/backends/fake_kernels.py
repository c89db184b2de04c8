"""The fake backend's kernels: stand-ins for any op's variants and the faults tests plant.

A launch of any variant computes its op's float64 reference into the output (`emulator`,
rounded to the dtype), so every variant that "compiles" is right, except the planted faults
(`FAULTS`, by entry name: a crash, a dying or hanging worker, garbage on the channel, a lost
node, a wrong element). An entry "compiles" (`compiles`) when it is a built-in kernel's, a
fault, or a function its file defines; anything else is a COMPILE_ERROR.
$CUDABENCH_FAKE_PLANT plants a fault at some shapes only (`plantings`: `cudabench verify`'s
tests). backends/fake.py is the backend that launches them.
"""

from __future__ import annotations

import functools
import math
import os
import re
import signal
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cudabench.backends.base import KernelCrash
from cudabench.build.nvcc import CompileError
from cudabench.core.paths import BUILTIN_KERNELS

FakeKernel = Callable[..., Any]  # called as kernel(grid, block, *args)
# A fault is called with the stand-in of the variant's op first (the faults that still write
# a result, or a wrong one, use it): fault(emulate, grid, block, *args).
Fault = Callable[..., None]


def emulator(op: Any) -> FakeKernel:
    """A stand-in for any kernel of `op` (a cudabench.op.Op): its float64 reference of the
    inputs it is passed, rounded once to the output's dtype, written into the output argument.
    Which arguments are the inputs and the output comes from the op's argument list (an
    in-place op's one array is both). The rounded reference of the last inputs is kept, by
    their contents (`fingerprint`): a row's launches all see the same inputs, so it is
    computed once a row, not once a launch, and inputs that changed (an in-place input not
    restored) are computed again."""
    roles = op.arg_roles()
    at = {name: i for i, (role, name) in enumerate(roles) if role in ("input", "inplace")}
    missing = [t.name for t in op.inputs if t.name not in at]
    outs = [i for i, (role, _) in enumerate(roles) if role in ("output", "inplace")]
    if missing or not outs:
        raise CompileError(
            f"the fake backend cannot emulate {op.name}: its argument list "
            f"lacks {', '.join(missing) or 'the output'}"
        )
    order, out_at = [at[t.name] for t in op.inputs], outs[0]
    kept: list[Any] = [None, None]  # (the inputs' fingerprint and the output's dtype, the result)

    def kernel(grid: Any, block: Any, *args: Any) -> Any:
        inputs = tuple(args[i] for i in order)
        out = args[out_at]
        key = (fingerprint(inputs), out.dtype.str)
        if kept[0] != key:
            ref, _ = op.expected(np, inputs)
            kept[:] = [key, ref.astype(out.dtype).reshape(-1)]
        out.reshape(-1)[...] = kept[1]
        return out

    return kernel


def dims_of_args(op: Any, args: tuple[Any, ...]) -> dict[str, int]:
    """The case's dims, read back from a launch's arrays (the op's inputs and output)."""
    roles = op.arg_roles()
    ins = {name: args[i] for i, (role, name) in enumerate(roles) if role in ("input", "inplace")}
    out = next(args[i] for i, (role, _) in enumerate(roles) if role in ("output", "inplace"))
    return dict(op.dims_of(tuple(ins[t.name] for t in op.inputs), out))


def fingerprint(arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    """What identifies the contents of arrays: each one's shape, dtype and CRC-32 of its bytes
    (a few microseconds a megabyte, against the milliseconds of a reference)."""
    return tuple(
        (a.shape, a.dtype.str, zlib.crc32(np.ascontiguousarray(a).reshape(-1).view(np.uint8).data))
        if isinstance(a, np.ndarray)
        else a
        for a in arrays
    )


def _crash(emulate: FakeKernel, grid: int, block: int, *args: Any) -> None:
    raise KernelCrash("cudaErrorIllegalAddress", "an illegal memory access was encountered")


def _die(emulate: FakeKernel, grid: int, block: int, *args: Any) -> None:
    os._exit(9)  # the process vanishes, as with a segfault in a driver


def _hang(emulate: FakeKernel, grid: int, block: int, *args: Any) -> None:
    time.sleep(3600)


def garbage(emulate: FakeKernel, grid: int, block: int, *args: Any, channel: Any = None) -> None:
    if channel is not None:  # bytes that are not a message, on the worker's channel
        channel.send_bytes(b"\x80not a pickle")
    emulate(grid, block, *args)


def _kill_node(emulate: FakeKernel, grid: int, block: int, *args: Any) -> None:
    """The first time (the file at $CUDABENCH_FAKE_KILL_ONCE holds fewer than
    $CUDABENCH_FAKE_KILLS bytes, default 1: one is added at each kill), or every time with
    $CUDABENCH_FAKE_KILL_ALWAYS: kill the process that started this worker (on a Dask cluster,
    the Dask worker: a node lost mid-task), then this worker with it. Later: a correct
    result."""
    marker = os.environ.get("CUDABENCH_FAKE_KILL_ONCE", "")
    kills = int(os.environ.get("CUDABENCH_FAKE_KILLS", "1") or 1)
    done = os.path.getsize(marker) if marker and os.path.exists(marker) else 0
    if os.environ.get("CUDABENCH_FAKE_KILL_ALWAYS") or (marker and done < kills):
        if marker:
            with open(marker, "a") as counted:
                counted.write("x")
        os.kill(os.getppid(), signal.SIGKILL)
        os._exit(9)
    emulate(grid, block, *args)


def _wrong(emulate: FakeKernel, grid: int, block: int, *args: Any) -> None:
    """The right result but for its last output element, which is off by 1 (or by itself):
    a variant planted wrong, for a test of validation that needs no GPU."""
    flat = emulate(grid, block, *args).reshape(-1)  # the output it wrote
    flat[-1] = flat[-1] + max(1.0, abs(float(flat[-1])))


# Faults for the worker tests and for planting a wrong variant (a .cu header naming these
# entries gets them, whatever its op): a CUDA error, a process that dies, a kernel that never
# returns, a worker that sends garbage, a lost node, a wrong output element.
FAULTS: dict[str, Fault] = {
    "fake_crash": _crash,
    "fake_die": _die,
    "fake_hang": _hang,
    "fake_garbage": garbage,
    "fake_kill_node": _kill_node,
    "fake_wrong": _wrong,
}
_ENTRY = re.compile(r"^\s*//.*?\bentry:\s*([A-Za-z_]\w*)", re.MULTILINE)
PLANT_ENV = "CUDABENCH_FAKE_PLANT"
PLANT_KINDS = {"wrong": _wrong, "crash": _crash, "hang": _hang, "die": _die}


@dataclass(frozen=True)
class Planting:
    """A fault planted in a variant at the shapes where `when` holds: an arithmetic
    predicate over the op's dims and `n` (their product), as a header's constraints are
    written (ops/space.py: names, integers, + - * // % **, comparisons, and/or/not)."""

    variant: str  # a variant's name, or * for every variant
    when: str
    kind: str  # wrong, crash, hang or die

    def holds(self, dims: dict[str, int]) -> bool:
        from cudabench.ops.space import Space

        values = {**dims, "n": math.prod(dims.values())}
        return Space(tuple((name, (1,)) for name in values), (self.when,)).allows(values)


def plantings(text: str | None = None) -> list[Planting]:
    """$CUDABENCH_FAKE_PLANT (or `text`): `VARIANT: PREDICATE -> KIND` entries joined by
    `;`, e.g. `naive: cols % 32 != 0 -> wrong; float4: n > 5000 -> crash`. CompileError (one
    line) for an entry that cannot be read."""
    text = os.environ.get(PLANT_ENV, "") if text is None else text
    found = []
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        name, colon, rest = entry.partition(":")
        when, arrow, kind = rest.rpartition("->")
        if not colon or not arrow or kind.strip() not in PLANT_KINDS or not when.strip():
            raise CompileError(
                f"{PLANT_ENV}: {entry!r} is not 'VARIANT: PREDICATE -> KIND' "
                f"(KIND one of {', '.join(PLANT_KINDS)})"
            )
        found.append(Planting(name.strip(), when.strip(), kind.strip()))
    return found


@functools.cache
def catalogue_entries() -> frozenset[str]:
    """The entry names the built-in kernels' headers declare (kernels/<op>/*.cu)."""
    names: set[str] = set()
    for path in BUILTIN_KERNELS.glob("*/*.cu"):
        names.update(_ENTRY.findall(path.read_text()))
    return frozenset(names)


def compiles(entry: str, path: str) -> bool:
    """Whether the fake "compiles" an entry: a built-in kernel's, a fault, or a function its
    file defines (`name(` in the source); anything else is a compile error, as with nvcc."""
    bare = entry.split("<")[0].strip()
    if bare in FAULTS or bare in catalogue_entries():
        return True
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(rf"\b{re.escape(bare)}\s*\(", text) is not None
