"""cudabench: is my CUDA kernel right, how fast is it against the hardware and the vendor
library, and why.

Importing the package needs neither CuPy nor a GPU: the GPU backend is imported only when a
command actually runs kernels. docs/architecture.md maps the subpackages.
"""

import sys
import types
from typing import Any

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
]
_API = ("ceilings", "compare", "history", "profile", "run", "timeit", "tune")


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


def _api_function(name: str) -> Any:
    """`cudabench.<name>` as the API's function, whatever the import system set there."""

    def get(_: types.ModuleType) -> Any:
        from cudabench import api

        return getattr(api, name)

    def keep(_: types.ModuleType, value: object) -> None:
        """Importing the subpackage of the same name sets it here: it stays in sys.modules
        (`from cudabench.run import plan` reads it there), the name stays the function."""

    return property(get, keep)


class _Package(types.ModuleType):
    """The package's module. `cudabench.run` and `cudabench.tune` are the API's functions and
    also the names of two subpackages (cudabench/run/, cudabench/tune/); importing a
    subpackage makes it an attribute of its parent, which would hide the function behind a
    module. These properties keep the functions in place. The subpackages are reached by
    `from cudabench.run import session` or `import cudabench.run.session` (sys.modules), not
    as attributes: `import cudabench.run.session as s` reads `cudabench.run` as an attribute
    and fails."""

    run = _api_function("run")
    tune = _api_function("tune")


sys.modules[__name__].__class__ = _Package
