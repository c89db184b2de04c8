"""The package's shape (docs/architecture.md): layered subpackages, no import circle between
modules (function-local imports included), and only the faces directly in cudabench/.
`lint-imports` (CI) checks the layers' order; this checks what a layers contract cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import cudabench

grimp = pytest.importorskip("grimp")  # import-linter's graph; installed by the test extra

PACKAGE = Path(cudabench.__file__).parent
FACES = {"__init__.py", "__main__.py", "op.py", "profiled.py"}


def _circles(graph: Any) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return found


@pytest.fixture(scope="module")
def graph() -> Any:
    # typing-only imports count too: a circle drawn only for the type checker is still one
    return grimp.build_graph("cudabench", exclude_type_checking_imports=False)


def test_no_import_circle(graph):
    assert _circles(graph) == []


def test_the_circle_finder_finds_one():
    class Two:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(module):
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[module]

    assert _circles(Two()) == [["a", "b"]]


def test_only_the_faces_sit_directly_in_the_package():
    """Beside the layers' subpackages: the package's own files and the faces users import
    (the Python API is the subpackage api/, one module per kind of call)."""
    assert {p.name for p in PACKAGE.glob("*.py")} <= FACES
    assert len(FACES) <= 6
    assert (PACKAGE / "api" / "__init__.py").is_file()


def test_every_subpackage_says_what_its_layer_owns():
    for folder in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        doc = (folder / "__init__.py").read_text()
        assert doc.startswith('"""') and len(doc) > 80, f"{folder.name}/__init__.py: no layer docstring"


def test_no_subpackage_shadows_the_api():
    """`cudabench.run(...)` and `cudabench.tune(...)` are functions: a subpackage of that name
    would replace them as soon as it is imported."""
    import importlib

    for folder in PACKAGE.iterdir():
        if (folder / "__init__.py").is_file():
            importlib.import_module(f"cudabench.{folder.name}")
    for name in cudabench.__all__:
        assert not (PACKAGE / name).is_dir(), f"cudabench/{name}/ shadows cudabench.{name}"
    assert callable(cudabench.run) and callable(cudabench.tune) and callable(cudabench.timeit)
