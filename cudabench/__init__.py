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
    """The Python API (api/) under the package's own name, imported on first use:
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
        _start_early(sys.argv[1:])
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


# The commands whose plain workers start before the CLI has loaded (execution/early.py), and
# the words that leave them to the command: help, the spaces shown, a Dask cluster
_EARLY = ("run", "tune")
_NOT_EARLY = ("--help", "-h", "--space", "--cluster")


def _start_early(words: list[str]) -> None:
    """`cudabench run|tune ... [--devices D] [--timer T]`: start the plain workers for D
    (default 0) with the clock T (default events) now, beside the CLI's imports and planning
    (about 1.3 s on an H200 machine). Devices that do not parse start none: the command says
    why. tests/test_early.py holds these words to the commands' own options."""
    if not words or words[0] not in _EARLY or any(w.partition("=")[0] in _NOT_EARLY for w in words):
        return
    from cudabench.core.errors import SweepError
    from cudabench.execution import early
    from cudabench.execution.worker_process import parse_devices

    try:
        devices = parse_devices(_option(words, ("--devices", "--device")) or "0")
    except SweepError:
        return
    try:
        early.start(devices, _option(words, ("--timer",)) or "events")
    except Exception:  # an optimisation only: the pool starts its workers itself
        early.discard()


def _option(words: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the last of these options among the words (`--name V` or `--name=V`)."""
    value = None
    for index, word in enumerate(words):
        name, equals, rest = word.partition("=")
        if name in names:
            value = rest if equals else (words[index + 1] if index + 1 < len(words) else None)
    return value


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
