"""NVTX ranges in the domain `cudabench`, nested op -> variant -> shape -> dtype, so that

    ncu --nvtx --nvtx-include "cudabench@reduce/float4/442368x128/bfloat16/" ...

profiles exactly that variant at that shape and dtype (leave the dtype off for all of them).
Range names never contain `/` (ncu reads it as nesting), `:` or `"` (they delimit the ranges
in ncu's CSV). Without a profiler attached a range costs well under a microsecond. If the
`nvtx` package is missing the ranges are no-ops.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

DOMAIN = "cudabench"

try:
    import nvtx as _nvtx
except ImportError:  # pragma: no cover - nvtx is a declared dependency
    _nvtx = None


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A push/pop range named `name` in the cudabench domain."""
    if "/" in name or ":" in name or '"' in name:
        raise ValueError(f"NVTX range name {name!r} must not contain '/', ':' or '\"'")
    if _nvtx is None:
        yield
        return
    with _nvtx.annotate(name, domain=DOMAIN):
        yield


_QUANTIFIERS = re.compile(r"([\[\]+*\\])")


def ncu_filter(op: str, variant: str, shape_text: str | None = None, dtype: str | None = None) -> str:
    """The `--nvtx-include` expression for one variant (and optionally one shape and dtype).
    ncu reads `[`, `]`, `+` and `*` in an expression as quantifiers (bottom and top of the
    range stack, ranges between); a configured variant's range is `float4[BLOCK=512,...]`, so
    they are escaped with a backslash, as ncu's NVTX filtering documents."""
    parts = [op, variant] + ([shape_text] if shape_text else []) + ([dtype] if dtype else [])
    return f"{DOMAIN}@" + "/".join(_QUANTIFIERS.sub(r"\\\1", p) for p in parts) + "/"
