"""cudabench: is my CUDA kernel right, how fast is it against the hardware and the vendor
library, and why.

Importing the package needs neither CuPy nor a GPU: the GPU backend is imported only when a
command actually runs kernels. docs/architecture.md maps the subpackages.
"""

from cudabench.core.errors import SweepError, UsageError
from cudabench.core.version import __version__

__all__ = [
    "SweepError",
    "UsageError",
    "__version__",
    "ceilings",
    "compare",
    "history",
    "profile",
    "run",
    "timeit",
    "tune",
    "verify",
]
_API = ("ceilings", "compare", "history", "profile", "run", "timeit", "tune", "verify")


def __getattr__(name: str) -> object:
    """The Python API (api.py) under the package's own name, imported on first use:
    `cudabench.run`, `cudabench.tune`, `cudabench.timeit`, `cudabench.profile`, ..."""
    if name in _API:
        from cudabench import api

        return getattr(api, name)
    raise AttributeError(f"module 'cudabench' has no attribute {name!r}")


def __dir__() -> list[str]:
    """What tab completion offers: the API too, before it is imported."""
    return sorted({*globals(), *_API})
