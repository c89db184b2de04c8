"""Python variants (cudabench/ops/pyvariants.py): read from their decorators without importing
the file, run by the runner through the fake backend beside the .cu variants, and every way
one can fail is a row (ERROR with its message, or N/A with the reason)."""

import textwrap

import pytest

from cudabench.backends.fake import FakeBackend
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.core.records import Case, Status
from cudabench.core.timing import TimingOptions
from cudabench.measure.runner import CaseJob, Runner
from cudabench.ops import pyvariants, registry
from cudabench.ops.discovery import discover

QUICK = TimingOptions(warmup=1, min_samples=3, min_time_s=0.0, max_time_s=1.0)
OP = """\
from cudabench.op import Op, Scalar, Tensor, elements


class Scale(Op):
    about = "out = 2 x"
    dims = ("rows", "cols")
    inputs = (Tensor("x", "rows cols"),)
    outputs = (Tensor("out", "rows cols"),)
    scalars = (Scalar("n", "long long", lambda d: d.rows * d.cols),)
    rules = {"elements": elements()}
    library = {"xp": lambda x: 2 * x}

    def reference(self, xp, x):
        return 2 * x
"""
VARIANTS = '''\
"""Python variants of scale."""
import numpy as np

from cudabench.op import variant, xp_of

SECRET = 2


@variant(name="returns", dtypes=["float32", "bfloat16"], about="returns 2 x")
def twice(x):
    return x * SECRET


@variant(name="writes", writes=True, about="writes 2 x into out")
def into(x, out):
    xp_of(x).multiply(x, 2, out=out)


@variant(name="off_by_one")
def off(x):
    """adds one: wrong"""
    return 2 * x + 1


@variant(name="raises")
def boom(x):
    raise RuntimeError("no luck today")


@variant(name="needs_nothing_here", needs=("no_such_module_anywhere",))
def needy(x):
    return 2 * x


@variant(name="gpu_only", gpu=True, requires={"max_cols": 4})
def on_gpu(x):
    return 2 * x


def helper(x):  # no decorator: not a variant
    return x
'''


@pytest.fixture
def scale_op(tmp_path):
    folder = tmp_path / "ops" / "scale"
    folder.mkdir(parents=True)
    (folder / "op.py").write_text(OP)
    (folder / "python_rows.py").write_text(VARIANTS)
    registry.use_ops([tmp_path / "ops"])
    return folder


def test_the_decorators_are_read_without_importing_the_file(scale_op):
    (scale_op / "python_rows.py").write_text(VARIANTS.replace("import numpy as np", "import no_such_thing"))
    variants, problems = discover("scale", [BUILTIN_KERNELS])
    assert problems == []
    named = {v.name: v for v in variants}
    assert list(named) == ["returns", "writes", "off_by_one", "raises", "needs_nothing_here", "gpu_only"]
    returns = named["returns"]
    assert (returns.kind, returns.function, returns.dtypes, returns.about) == (
        "python",
        "twice",
        ("float32", "bfloat16"),
        "returns 2 x",
    )
    assert named["off_by_one"].about == "adds one: wrong"  # the docstring's first line
    assert named["gpu_only"].requires == (("max_cols", 4),)
    assert returns.launches == () and returns.header_line == 9
    assert named["needs_nothing_here"].needs == ("no_such_module_anywhere",) and returns.needs == ()


def test_decorator_arguments_that_cannot_be_read_are_one_line(scale_op):
    (scale_op / "more.py").write_text(
        textwrap.dedent("""\
        from cudabench.op import variant
        N = 3
        @variant(name="x", dtypes=N)
        def a(x): return x
        @variant(name="y", requires={"max_colz": 4})
        def b(x): return x
        @variant(name="z", needs=("torch", 3))
        def c(x): return x
        @variant(name="w", needs="torch")
        def d(x): return x
        """)
    )
    (scale_op / "broken.py").write_text("def (:\n")
    variants, problems = discover("scale", [BUILTIN_KERNELS])
    assert (
        f"{scale_op / 'more.py'}:3: @variant dtypes= must be a literal "
        "(cudabench reads it without importing the file)"
    ) in problems
    assert any(p.startswith(f"{scale_op / 'more.py'}:5: @variant requires 'max_colz'") for p in problems)
    needs = "@variant needs= must list module names, e.g. ('triton', 'torch')"
    assert f"{scale_op / 'more.py'}:7: {needs}" in problems
    assert next(v for v in variants if v.name == "w").needs == ("torch",)
    assert any(
        p.startswith(f"{scale_op / 'broken.py'}:1: the Python variant file does not parse") for p in problems
    )
    assert "broken" in {v.name for v in variants}  # still a variant: its row says why


def test_python_variants_run_beside_the_kernels_and_fail_as_rows(scale_op):
    variants, _ = discover("scale", [BUILTIN_KERNELS])
    job = CaseJob(Case("scale", (8, 33)), tuple(variants), ("xp",), QUICK)
    rows = {r.variant: r for r in Runner(FakeBackend()).run_job(job)}
    assert rows["returns"].status is Status.OK and rows["returns"].time_us and not rows["returns"].is_baseline
    assert rows["writes"].status is Status.OK
    assert rows["off_by_one"].status is Status.FAIL and "outputs wrong" in rows["off_by_one"].error
    raised = rows["raises"]  # its text, and where in the variant's file it was raised
    assert raised.status is Status.ERROR and raised.error.startswith("RuntimeError: no luck today (")
    assert "python_rows.py:" in raised.error and raised.error.endswith(", in boom)")
    assert rows["needs_nothing_here"].status is Status.N_A
    assert rows["needs_nothing_here"].error.startswith("needs no_such_module_anywhere, which does not import")
    assert rows["gpu_only"].status is Status.N_A and "cols <= 4" in rows["gpu_only"].error
    assert rows["xp"].status is Status.OK and rows["xp"].is_baseline
    (small,) = Runner(FakeBackend()).run_job(
        CaseJob(Case("scale", (2, 4)), (next(v for v in variants if v.name == "gpu_only"),), (), QUICK)
    )
    assert small.status is Status.N_A and small.error == "needs a GPU (the fake backend has NumPy arrays)"


def test_a_file_that_does_not_import_is_an_error_row(scale_op):
    (scale_op / "python_rows.py").write_text(VARIANTS.replace("SECRET = 2", "SECRET = 1 / 0"))
    variants, _ = discover("scale", [BUILTIN_KERNELS])
    job = CaseJob(Case("scale", (4, 4)), tuple(v for v in variants if v.name == "returns"), (), QUICK)
    (row,) = Runner(FakeBackend()).run_job(job)
    assert row.status is Status.ERROR
    assert row.error == f"{scale_op / 'python_rows.py'}:6: ZeroDivisionError: division by zero"


def test_a_returned_non_array_says_so(scale_op):
    (scale_op / "python_rows.py").write_text(VARIANTS.replace("return x * SECRET", "return None"))
    variants, _ = discover("scale", [BUILTIN_KERNELS])
    job = CaseJob(Case("scale", (4, 4)), tuple(v for v in variants if v.name == "returns"), (), QUICK)
    (row,) = Runner(FakeBackend()).run_job(job)
    assert row.status is Status.ERROR and "returned NoneType, not an array of 16 elements" in row.error


def test_a_host_variant_runs_on_numpy_and_is_n_a_on_a_gpu_backend(scale_op):
    """host=True: an emulation on NumPy arrays (tests/corpus's), never handed CuPy arrays."""
    (scale_op / "host_rows.py").write_text(
        textwrap.dedent("""\
        import numpy as np
        from cudabench.op import variant
        @variant(name="on_host", host=True, dtypes=["float32", "bfloat16"])
        def on_host(x):
            return (2 * np.asarray(x, dtype=np.float32)).astype(x.dtype)
        """)
    )
    variants, problems = discover("scale", [BUILTIN_KERNELS])
    assert problems == []
    (host,) = [v for v in variants if v.name == "on_host"]
    job = CaseJob(Case("scale", (8, 33), "bfloat16"), (host,), (), QUICK)
    (row,) = Runner(FakeBackend()).run_job(job)
    assert row.status is Status.OK
    _, info = pyvariants.load(host)
    assert info.host and pyvariants.unavailable(info, "fake") is None
    reason = pyvariants.unavailable(info, "cupy")
    assert reason == "a host variant (NumPy arrays): not run on the cupy backend"


def test_the_triton_softmax_variant_is_listed_and_n_a_without_a_gpu():
    variants, problems = discover("softmax", [BUILTIN_KERNELS])
    assert problems == []
    (triton,) = [v for v in variants if v.name == "triton_rows"]
    assert triton.kind == "python" and triton.dtypes == ("float32", "float16", "bfloat16")
    job = CaseJob(Case("softmax", (64, 1000), "bfloat16"), (triton,), (), QUICK)
    (row,) = Runner(FakeBackend()).run_job(job)
    assert row.status is Status.N_A and (
        "needs triton" in row.error or "needs torch" in row.error or "needs a GPU" in row.error
    )
    (long,) = Runner(FakeBackend()).run_job(CaseJob(Case("softmax", (4, 16384)), (triton,), (), QUICK))
    assert long.status is Status.N_A and long.error == "needs cols <= 8192 (cols = 16384)"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(4096, 1000), (300, 8192), (1000,)])
def test_the_triton_softmax_variant_validates_on_a_gpu(dtype, shape):
    """Runs on a CUDA GPU only (Triton compiles for it): without one it always skips, as
    the `gpu` marker's reason says; torch and triton come with `pip install -e ".[gpu-tests]"`."""
    why = 'the Triton test needs torch and triton: pip install -e ".[gpu-tests]"'
    pytest.importorskip("triton", reason=why)
    pytest.importorskip("torch", reason=why)
    from cudabench.backends import open_backend

    (triton,) = [v for v in discover("softmax", [BUILTIN_KERNELS])[0] if v.name == "triton_rows"]
    (row,) = Runner(open_backend(device=0)).run_job(
        CaseJob(Case("softmax", shape, dtype), (triton,), (), QUICK)
    )
    assert row.status is Status.OK, row.error
    assert row.method in ("graph", "single", "loop")


@pytest.mark.gpu
def test_a_worker_preloading_triton_compiles_and_loads_a_kernel_but_launches_none(monkeypatch):
    """`--preload triton` (a successor, before it is in charge of its GPU) pays Triton's own
    start (ops/triton_warm.py): a kernel compiled and loaded, and nothing run on the GPU."""
    why = 'the Triton test needs torch and triton: pip install -e ".[gpu-tests]"'
    pytest.importorskip("triton", reason=why)
    torch = pytest.importorskip("torch", reason=why)
    from cudabench.execution.worker import _preload
    from cudabench.ops import triton_warm

    x = torch.zeros(16, device="cuda:0")
    torch.cuda.synchronize()
    monkeypatch.setattr(triton_warm.torch, "empty", lambda *a, **k: x)  # the array it is given
    _preload("triton", 0)
    torch.cuda.synchronize()
    assert int(x.count_nonzero()) == 0  # _touch adds 1 where it runs: it did not
    kernels = [k for cache in triton_warm._touch.device_caches.values() for k in cache[0].values()]
    assert kernels and all(getattr(k, "module", None) is not None for k in kernels)  # loaded
