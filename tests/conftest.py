"""Markers: `gpu` tests skip unless CuPy sees a CUDA device; `nvcc` tests skip without nvcc."""

from __future__ import annotations

import functools
import shutil
import textwrap
from pathlib import Path

import pytest


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(pytest.mark.skip(reason="no CUDA GPU answers (CuPy)"))
        if "nvcc" in item.keywords and not shutil.which("nvcc"):
            item.add_marker(pytest.mark.skip(reason="nvcc not on PATH"))


def write_kernel(folder: Path, name: str, body: str, header: str = "") -> Path:
    """A .cu file with a reduce header for variant `name` and the given kernel body."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.cu"
    head = header or textwrap.dedent(f"""\
        // cudabench:
        //   variant: {name}
        //   entry: {name}
        //   block: 256
        //   grid: segments
        //   about: planted test kernel
        """)
    path.write_text(head + "\n" + textwrap.dedent(body))
    return path


@pytest.fixture
def kernel_dir(tmp_path: Path) -> Path:
    return tmp_path / "my_kernels"


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own history database and tuning file (never results/ of the
    checkout); a test that wants another sets the variable again."""
    monkeypatch.setenv("CUDABENCH_DB", str(tmp_path / "history.db"))
    monkeypatch.setenv("CUDABENCH_TUNING", str(tmp_path / "tuning.json"))
    # no `% ceiling` unless a test asks: measuring them would run the stream ops first
    monkeypatch.setenv("CUDABENCH_CEILINGS", "off")
    # only the built-in ops, unless a test adds folders (--ops, $CUDABENCH_OPS)
    from cudabench.ops import registry

    monkeypatch.delenv("CUDABENCH_OPS", raising=False)
    registry.use_ops(None)


class StopAfter:
    """A sweep listener that plays Ctrl-C once `rows` rows have ended."""

    def __init__(self, rows: int) -> None:
        self.rows, self.seen = rows, 0

    def started(self, case: object, name: str, device: int) -> None:
        pass

    def finished(self, row: object) -> None:
        self.seen += 1
        if self.seen == self.rows:
            raise KeyboardInterrupt
