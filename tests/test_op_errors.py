"""What the user's op code raises at run time (its reference, its inputs, a Python variant) is
a row's one line naming the file and line that raised it, as an op file that does not import
names its line (ops/registry.py's describe_error): in a run's rows (made in the worker
processes, the same text as in this process) and in `tolerance`'s error. An error of
cudabench's own code or a library's keeps its text."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cudabench.backends.fake import FakeBackend
from cudabench.cli import app
from cudabench.core.names import UnknownName
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.ops import registry

QUICK = ["--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]
NAME_ERROR = "NameError: name 'undefined_name' is not defined"
runner = CliRunner()


@pytest.fixture
def myop(tmp_path, monkeypatch):
    """`cudabench new op myop --in myops`, run in tmp_path (the folder as a user names it:
    relative to the working directory); returns the op file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CUDABENCH_BACKEND", "fake")
    made = runner.invoke(app, ["new", "op", "myop", "--in", "myops"])
    assert made.exit_code == 0, made.output
    return Path("myops/myop/op.py")


def break_line(op_file: Path, old: str, new: str) -> int:
    """`old` replaced by `new` in the op file; the (1-based) line it is on."""
    text = op_file.read_text()
    assert text.count(old) == 1
    op_file.write_text(text.replace(old, new))
    return text[: text.index(old)].count("\n") + 1


def run_rows(tmp_path: Path) -> dict[str, dict]:
    result = runner.invoke(app, ["run", "myop", "--ops", "myops", "-s", "2^10", *QUICK, "-o", "out"])
    assert result.exit_code != 0, result.output
    doc = json.loads(next((tmp_path / "out").glob("*_myop.json")).read_text())
    return {r["variant"]: r for r in doc["rows"]}


def test_a_reference_that_raises_names_its_line_in_the_rows(myop, tmp_path):
    line = break_line(myop, "return x / xp.sqrt(", "return undefined_name / xp.sqrt(")
    rows = run_rows(tmp_path)
    expected = f"{NAME_ERROR} (myops/myop/op.py:{line}, in reference)"
    assert {name: (r["status"], r["error"]) for name, r in rows.items()} == {
        "naive": ("ERROR", expected),
        "cupy": ("ERROR", expected),
    }
    # the worker processes' rows say what this process says
    registry.use_ops([Path("myops")])
    quick = TimingOptions(warmup=0, min_samples=2, min_time_s=0.0, max_time_s=0.01)
    (row,) = Runner(FakeBackend()).run_job(CaseJob(Case("myop", (1024,)), (), ("cupy",), quick))
    assert (row.status, row.error) == (Status.ERROR, expected)


def test_inputs_that_raise_name_their_line(myop, tmp_path):
    line = break_line(
        myop,
        "    def flop_count(self, dims):",
        "    def make_inputs(self, xp, shape, seed):\n"
        "        return (xp.ones(shape, dtype=xp.float32) + {}['x'],)\n\n"
        "    def flop_count(self, dims):",
    )
    rows = run_rows(tmp_path)
    assert rows["naive"]["error"] == f"KeyError: 'x' (myops/myop/op.py:{line + 1}, in make_inputs)"
    said = runner.invoke(app, ["tolerance", "myop", "--ops", "myops", "-s", "2^10"])
    assert said.exit_code != 0
    assert (
        f"myop at 1024: the op's inputs or reference raised KeyError: 'x' "
        f"(myops/myop/op.py:{line + 1}, in make_inputs)"
    ) in said.output


def test_tolerance_names_the_line_of_a_reference_that_raises(myop):
    line = break_line(myop, "return x / xp.sqrt(", "return undefined_name / xp.sqrt(")
    said = runner.invoke(app, ["tolerance", "myop", "--ops", "myops", "-s", "2^10"])
    assert said.exit_code == 2, said.output
    error = (
        f"myop at 1024: the op's inputs or reference raised {NAME_ERROR} "
        f"(myops/myop/op.py:{line}, in reference)"
    )
    assert error in said.output and "\n" not in error


def test_a_python_variant_that_raises_names_its_file_and_line(myop, tmp_path):
    Path("myops/myop/rows.py").write_text(
        "from cudabench.op import variant\n\n\n@variant()\ndef halves(x):\n    return helper(x)\n\n\n"
        "def helper(x):\n    raise RuntimeError('no luck\\ntoday')\n"
    )
    rows = run_rows(tmp_path)
    assert rows["halves"]["error"] == "RuntimeError: no luck today (myops/myop/rows.py:10, in helper)"
    assert rows["naive"]["status"] == "OK"
    said = runner.invoke(app, ["tolerance", "myop", "--ops", "myops", "-s", "2^10"])
    assert said.exit_code == 0, said.output
    assert "RuntimeError: no luck today (myops/myop/rows.py:10, in helper)" in said.output


def _without_this_frame(exc: BaseException) -> BaseException:
    """The exception as a caller inside cudabench sees it: this test's own frame (a file
    outside cudabench, so the user's) dropped from its traceback."""
    assert exc.__traceback__ is not None
    return exc.with_traceback(exc.__traceback__.tb_next)


def test_an_error_of_cudabench_or_a_library_keeps_its_text():
    with pytest.raises(UnknownName) as own:
        registry.get_op("no_such_op_anywhere")
    exc = _without_this_frame(own.value)
    assert registry.describe_error(exc) == f"UnknownName: {exc}"
    with pytest.raises(np.linalg.LinAlgError) as library:
        np.linalg.inv(np.zeros((2, 2)))
    assert registry.describe_error(_without_this_frame(library.value)) == "LinAlgError: Singular matrix"


def test_a_compiled_librarys_relative_source_name_is_not_the_users(tmp_path):
    """Cython modules (CuPy, numpy.random) name their frames by a relative source path, which
    would resolve under the working directory: a library's frame, never the user's line."""
    folder = tmp_path / "myop"
    folder.mkdir()
    (folder / "op.py").write_text("def reference(f):\n    return f()\n")
    module = registry.import_file(folder / "op.py", "test_op_errors_pyx")
    library = compile("def inner():\n    raise ValueError('low >= high')\n", "cupy/_core/core.pyx", "exec")
    space: dict[str, object] = {}
    exec(library, space)
    with pytest.raises(ValueError) as raised:
        module.reference(space["inner"])
    said = registry.describe_error(_without_this_frame(raised.value), folder)
    assert said.startswith("ValueError: low >= high (") and "op.py:2, in reference)" in said


def test_the_op_folder_is_the_users_wherever_it_lies(tmp_path, monkeypatch):
    """A folder inside a site-packages (an installed catalogue, say) is a library's, unless
    it is the op's own folder. Named in full from a working directory it is not under."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    folder = tmp_path / "site-packages" / "myop"
    folder.mkdir(parents=True)
    (folder / "op.py").write_text("def reference():\n    return 1 / 0\n")
    module = registry.import_file(folder / "op.py", "test_op_errors")
    with pytest.raises(ZeroDivisionError) as raised:
        module.reference()
    exc = _without_this_frame(raised.value)
    assert registry.describe_error(exc) == "ZeroDivisionError: division by zero"
    assert registry.describe_error(exc, folder) == (
        f"ZeroDivisionError: division by zero ({folder / 'op.py'}:2, in reference)"
    )
    monkeypatch.chdir(tmp_path)  # under the working directory: relative, as typed
    assert registry.describe_error(exc, folder) == (
        "ZeroDivisionError: division by zero (site-packages/myop/op.py:2, in reference)"
    )
