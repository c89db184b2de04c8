"""Op discovery (cudabench/ops/registry.py): op folders from --ops and $CUDABENCH_OPS, one-line
errors for a file that does not import, a declaration that cannot serve and a name clash, and
a job that carries its op's file to a worker process."""

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cudabench.core.names import UnknownName
from cudabench.core.records import Case
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob
from cudabench.ops import registry
from cudabench.ops.registry import all_ops, get_op

SCALE = """\
from cudabench.op import Op, Scalar, Tensor, elements


class Scale(Op):
    about = "out = 2 x"
    dims = ("n",)
    inputs = (Tensor("x", "n"),)
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n"),)
    rules = {"elements": elements()}

    def reference(self, xp, x):
        return 2 * x
"""


def write_op(folder: Path, name: str, text: str = SCALE) -> Path:
    path = folder / name / "op.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_an_ops_folder_adds_its_ops_named_by_their_folders(tmp_path):
    write_op(tmp_path, "twice")
    assert "twice" not in all_ops()
    registry.use_ops([tmp_path])
    op = get_op("twice")
    assert op.name == "twice" and op.about == "out = 2 x"
    assert registry.op_file("twice") == str((tmp_path / "twice" / "op.py").resolve())
    assert get_op("reduce").name == "reduce"  # the catalogue stays


def test_one_op_folder_and_the_environment_variable(tmp_path, monkeypatch):
    write_op(tmp_path / "a", "one")
    write_op(tmp_path / "b", "two")
    registry.use_ops([tmp_path / "a" / "one"])  # an op's own folder
    monkeypatch.setenv("CUDABENCH_OPS", os.pathsep.join([str(tmp_path / "b"), str(tmp_path / "nope")]))
    assert {"one", "two"} <= set(all_ops())
    assert registry.problems() == [f"CUDABENCH_OPS: {tmp_path / 'nope'}: no such folder"]


def test_a_missing_ops_folder_is_one_line(tmp_path):
    with pytest.raises(registry.OpsFolderError, match=r"^--ops .*nope: no such folder$"):
        registry.use_ops([tmp_path / "nope"])


def test_a_name_clash_is_one_line_naming_both_files(tmp_path):
    write_op(tmp_path / "a", "same")
    write_op(tmp_path / "b", "same")
    registry.use_ops([tmp_path / "a", tmp_path / "b"])
    line = (
        f"op 'same' is defined twice: {tmp_path / 'a' / 'same' / 'op.py'} "
        f"and {tmp_path / 'b' / 'same' / 'op.py'}"
    )
    assert line in registry.problems()
    with pytest.raises(UnknownName) as refused:
        get_op("same")
    assert str(refused.value) == line


def test_a_sibling_import_says_why_it_does_not_work(tmp_path):
    """Op and variant files are imported by path, each on its own (two folders' helpers.py
    never mix): `import helpers` of a file beside it fails, and the line says so."""
    write_op(tmp_path, "sib", "import helpers\n")
    (tmp_path / "sib" / "helpers.py").write_text("X = 1\n")
    registry.use_ops([tmp_path])
    (problem,) = [p for p in registry.problems() if "sib" in p]
    assert "ModuleNotFoundError: No module named 'helpers' (helpers.py beside it is not importable" in problem
    assert "PYTHONPATH" in problem


def test_a_clash_with_the_catalogue_is_refused_too(tmp_path):
    write_op(tmp_path, "softmax")
    registry.use_ops([tmp_path])
    assert any("op 'softmax' is defined twice" in p and str(tmp_path) in p for p in registry.problems())


def test_a_file_that_does_not_import_is_one_line_with_its_line(tmp_path):
    write_op(tmp_path, "broken", "import math\nimport no_such_module_here\n")
    write_op(tmp_path, "typo", "class X(:\n    pass\n")
    write_op(tmp_path, "fine")
    registry.use_ops([tmp_path])
    found = registry.problems()
    assert (
        f"{tmp_path / 'broken' / 'op.py'}:2: ModuleNotFoundError: No module named 'no_such_module_here'"
    ) in found
    assert any(p.startswith(f"{tmp_path / 'typo' / 'op.py'}:1: SyntaxError") for p in found)
    assert get_op("fine").name == "fine"  # the others load
    with pytest.raises(UnknownName, match="No module named 'no_such_module_here'"):
        get_op("broken")


@pytest.mark.parametrize(
    "change, message",
    [
        (
            ('Tensor("x", "n")', 'Tensor("x", "m")'),
            r"op.py: bad: tensor x names an unknown dimension 'm' \(dims: n\)",
        ),
        (
            ("    def reference(self, xp, x):\n        return 2 * x\n", ""),
            r"op.py: bad: no reference: define reference\(self, xp, x\)",
        ),
        (("class Scale(Op)", "class Scale"), r"op.py: defines no Op subclass"),
    ],
)
def test_a_definition_that_cannot_serve_is_one_line_naming_the_file(tmp_path, change, message):
    write_op(tmp_path, "bad", SCALE.replace(*change))
    registry.use_ops([tmp_path])
    (problem,) = [p for p in registry.problems() if "bad" in p]
    assert problem.startswith(str(tmp_path / "bad" / "op.py"))
    assert pytest.importorskip("re").search(message, problem), problem


def test_did_you_mean_still_works():
    with pytest.raises(UnknownName, match=r"unknown op 'softmx' \(did you mean softmax"):
        get_op("softmx")


def test_a_job_carries_its_op_file_to_a_process_that_never_saw_the_folder(tmp_path):
    write_op(tmp_path, "twice")
    registry.use_ops([tmp_path])
    job = CaseJob(Case("twice", (8,)), (), (), TimingOptions())
    assert job.op_file == str((tmp_path / "twice" / "op.py").resolve())
    (tmp_path / "job.pickle").write_bytes(pickle.dumps(job))
    code = (
        "import pickle, sys; job = pickle.load(open(sys.argv[1], 'rb')); op = job.op(); "
        "print(op.name, op.arg_names())"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDABENCH_OPS"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "job.pickle")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.stdout.strip() == "twice ('x', 'out', 'n')", done.stderr


def test_an_ops_folder_without_an_op_says_so(tmp_path):
    from cudabench.core.names import UnknownName

    empty = tmp_path / "empty"
    empty.mkdir()
    registry.use_ops([empty])
    try:
        said = f"--ops {empty}: no op there (an op is a folder holding op.py, or a folder of such folders)"
        assert said in registry.problems()
        with pytest.raises(UnknownName, match="no op there"):
            registry.get_op("no_op_of_this_name")
    finally:
        registry.use_ops([])
    assert not any("no op there" in p for p in registry.problems())
