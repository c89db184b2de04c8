"""cudabench: is my CUDA kernel right, how fast is it against the hardware and the vendor
library, and why.

Importing the package needs neither CuPy nor a GPU: the GPU backend is imported only when a
command actually runs kernels. docs/architecture.md maps the subpackages.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy and ruff read it so)

if TYPE_CHECKING:  # imported on first use (below): the package itself imports nothing, so
    # a Ctrl-C at a command's first instant lands in the CLI's own handling (cli/__init__.py)
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
    `cudabench.run`, `cudabench.tune`, `cudabench.timeit`, `cudabench.profile`, ...; and
    the errors and the version."""
    if name in _API:
        from cudabench import api

        return getattr(api, name)
    if name in ("SweepError", "UsageError"):
        from cudabench.core import errors

        return getattr(errors, name)
    if name == "__version__":
        from cudabench.core import version

        return version.__version__
    raise AttributeError(f"module 'cudabench' has no attribute {name!r}")


def __dir__() -> list[str]:
    """What tab completion offers: the API too, before it is imported."""
    return sorted({*globals(), *_API, "SweepError", "UsageError", "__version__"} - {"TYPE_CHECKING"})


def _command() -> None:
    """The `cudabench` script and `python -m cudabench`: the CLI (cli/__init__.py), with a
    Ctrl-C while Python finds and loads it one line and exit 130 like any later one. It
    lives here, in the package that imports nothing, so that no import runs before the
    `try` (the CLI's own `main` catches every Ctrl-C after it has loaded). A Ctrl-C that
    Python can only report, not raise (in an import lock's weakref callback, in the threads'
    shutdown at exit), ends the command the same way (`_unraisable`)."""
    import signal
    import sys

    heard: list[int] = []

    def on_sigint(signum: int, frame: object) -> None:  # Python's own, and what it heard
        heard.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    sys.unraisablehook = _unraisable
    try:
        from cudabench.cli import main
    except KeyboardInterrupt:
        _interrupted()
    except BaseException:
        # a Ctrl-C inside the import machinery can surface as another error (an import's
        # `except ImportError` interrupted: "TypeError: expected a message argument")
        if heard:
            _interrupted()
        raise
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main()


def _interrupted() -> None:
    """One line, exit 130, nothing else run (no traceback, no exit handler's)."""
    import os
    import sys

    try:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
    finally:
        os._exit(130)


def _unraisable(info: object) -> None:
    """sys.unraisablehook of the CLI process: a KeyboardInterrupt is `_interrupted`; any
    other error Python reports as it would."""
    import sys

    if getattr(info, "exc_type", None) is KeyboardInterrupt:
        _interrupted()
    sys.__unraisablehook__(info)  # type: ignore[arg-type]
