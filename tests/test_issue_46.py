"""Issue 46, "what a new user and an audit still hit": each test names its item. GPU-free
(the fake backend, nvcc, or files written here)."""

import json
from pathlib import Path

import pytest
from conftest import interrupt
from typer.testing import CliRunner

from cudabench.cli import app

runner = CliRunner()
FAKE = {"CUDABENCH_BACKEND": "fake"}
QUICK = ["--no-ceilings", "--min-samples", "2", "--min-time", "0", "--max-time", "0.01", "--warmup", "0"]

# An op whose kernel takes its arguments in its own order (`args`), not the default
# (inputs, outputs, scalars): out = a - 2 b, so a and b bound to each other's names is wrong.
ORDERED_OP = """\
from cudabench.op import Op, Scalar, Tensor, elements


class Ordered(Op):
    about = "out = a - 2 b, the kernel's arguments in its own order"
    dims = ("n",)
    inputs = (Tensor("a", "n"), Tensor("b", "n"))
    outputs = (Tensor("out", "n"),)
    scalars = (Scalar("n", "int"),)
    args = ("n", "b", "out", "a")
    rules = {"flat": elements()}

    def reference(self, xp, a, b):
        return a - 2 * b
"""
ORDERED_KERNEL = """\
// cudabench:
//   variant: plain
//   entry: ordered_plain
//   block: 256
//   grid: flat
//   about: a thread an element
#include "common/dtype.cuh"

extern "C" __global__ void ordered_plain(int n, const elem_t* __restrict__ b, elem_t* __restrict__ out,
                                         const elem_t* __restrict__ a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = cb::from_float<elem_t>(cb::to_float(a[i]) - 2.0f * cb::to_float(b[i]));
}
"""


def ordered_op(root: Path, kernel: str = ORDERED_KERNEL) -> Path:
    folder = root / "ordered"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "op.py").write_text(ORDERED_OP)
    (folder / "plain.cu").write_text(kernel)
    return folder


# ---------------------------------------------------------------- 7: the kernel's parameters


def test_7_an_op_with_its_own_argument_order_runs_right(tmp_path):
    """Bound by name, in the op's `args` order: the emulated kernel reads a and b where the op
    put them. Binding in the default order (a, b, out, n) hands the kernel n's place to a
    and FAILs every row."""
    ordered_op(tmp_path / "ops")
    result = runner.invoke(
        app,
        ["run", "ordered", "--ops", str(tmp_path / "ops"), "-s", "1000", "-s", "4097", *QUICK, "--json"],
        env={**FAKE, "CUDABENCH_CACHE": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert {(r["variant"], r["shape"], r["status"]) for r in rows} == {
        ("plain", "1000", "OK"),
        ("plain", "4097", "OK"),
    }


def test_7_the_op_binds_each_argument_by_its_name():
    import numpy as np

    from cudabench.ops.protocol import Geometry

    namespace: dict = {}
    exec(compile(ORDERED_OP, "op.py", "exec"), namespace)
    op = namespace["Ordered"]()
    op.name = "ordered"
    a, b, out = np.ones(3), np.zeros(3), np.empty(3)
    args = op.kernel_args((a, b), out, {}, Geometry(1, 256))
    assert args[0] == 3 and args[1] is b and args[2] is out and args[3] is a
    assert op.arg_roles() == (("scalar", "n"), ("input", "b"), ("output", "out"), ("input", "a"))


@pytest.mark.nvcc
def test_7_check_compares_each_parameters_kind_and_names_the_first_mismatch(tmp_path, monkeypatch):
    """The kernel in the default order (a, b, out, n) where the op passes (n, b, out, a):
    four parameters, so the count agrees; the first parameter is a pointer where the op
    passes `int n`: one line naming the kernel's line, exit 1. In the op's order: OK."""
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    folder = ordered_op(tmp_path / "ops")
    ops = ["--ops", str(tmp_path / "ops"), "--arch", "sm_80"]
    good = runner.invoke(app, ["check", "ordered", *ops])
    assert good.exit_code == 0, good.output
    kernel = folder / "plain.cu"
    kernel.write_text(
        ORDERED_KERNEL.replace(
            "ordered_plain(int n, const elem_t* __restrict__ b, elem_t* __restrict__ out,\n"
            "                                         const elem_t* __restrict__ a)",
            "ordered_plain(const elem_t* __restrict__ a, const elem_t* __restrict__ b,\n"
            "                                         elem_t* __restrict__ out, int n)",
        )
    )
    bad = runner.invoke(app, ["check", "ordered", *ops])
    assert bad.exit_code == 1, bad.output
    (line,) = [ln for ln in bad.stderr.splitlines() if "parameter" in ln]
    assert line == (
        f"error: {kernel}:9: ordered_plain parameter 1 is a pointer or a 64-bit integer (.u64), "
        "but ordered passes int n there (its arguments, in order: n, b, out, a)"
    )


def test_7_ptx_parameters_read_each_kind():
    from cudabench.build.compile import ptx_parameters

    ptx = """
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1,
	.param .f32 k_param_2,
	.param .f64 k_param_3,
	.param .align 8 .b8 k_param_4[16],
	.param .u64 .ptr .global .align 4 k_param_5
)
{
}
.entry other()
{
}
"""
    assert ptx_parameters(ptx) == {"k": ("u64", "u32", "f32", "f64", "b8[16]", "u64"), "other": ()}


# ---------------------------------------------------------------- 8: requires on a parameter

VEC_KERNEL = """\
// cudabench:
//   variant: vec
//   op: reduce
//   entry: reduce_sum_vec
//   block: 256
//   grid: segments
//   params: {{VEC: [4, 2, {third}]}}
//   requires: {{cols_multiple_of: {needs}}}
//   about: VEC elements a load: right only where cols % VEC == 0
#include "common/dtype.cuh"
#ifndef VEC
#define VEC 4
#endif
static_assert(VEC != 3, "three is no vector width");

extern "C" __global__ void reduce_sum_vec(const float* __restrict__ x, float* __restrict__ out,
                                          float* partials, unsigned* counters, long long rows,
                                          long long cols, int group, int chunks) {{}}
"""


def vec_kernel(folder: Path, needs: str = "VEC", third: int = 1) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vec.cu"
    path.write_text(VEC_KERNEL.format(needs=needs, third=third))
    return path


def test_8_a_requirement_may_name_a_parameter_resolved_per_configuration(tmp_path):
    from cudabench.ops.header import parse_header
    from cudabench.ops.registry import get_op

    variant = parse_header(vec_kernel(tmp_path), "reduce")
    assert variant.requires == (("cols_multiple_of", "VEC"),)
    op = get_op("reduce")
    assert variant.requirements == (("cols_multiple_of", 4),)
    assert op.unmet(variant, (8, 6)) == "needs cols % 4 == 0 (cols = 6)"
    assert op.unmet(variant.configured({"VEC": 2}), (8, 6)) is None
    assert op.unmet(variant.configured({"VEC": 1}), (8, 7)) is None


def test_8_a_requirement_naming_no_parameter_is_an_error_at_its_line(tmp_path):
    from cudabench.ops.header import KernelHeaderError, parse_header

    path = vec_kernel(tmp_path, needs="VEX")
    with pytest.raises(KernelHeaderError) as caught:
        parse_header(path, "reduce")
    assert str(caught.value) == (
        f"{path}:8: requires cols_multiple_of: 'VEX' is neither an integer nor a parameter "
        "(did you mean VEC?)"
    )


def test_8_a_run_is_n_a_only_in_the_configurations_that_break_it(tmp_path):
    vec_kernel(tmp_path / "mine")
    result = runner.invoke(
        app,
        [
            "run",
            "reduce",
            "-s",
            "8x6",
            "-v",
            "vec",
            "--param",
            "VEC=4,2,1",
            "--kernels",
            str(tmp_path / "mine"),
        ]
        + [*QUICK, "--json"],
        env=FAKE,
    )
    assert result.exit_code == 0, result.output
    rows = {(r["variant"], r["params"]): r for r in json.loads(result.stdout)["rows"]}
    status = {params: r["status"] for (name, params), r in rows.items() if name == "vec"}
    assert status == {"VEC=4": "N/A", "VEC=2": "OK", "VEC=1": "OK"}
    assert "needs cols % 4 == 0" in rows[("vec", "VEC=4")]["error"]


@pytest.mark.nvcc
def test_8_check_all_compiles_every_configuration(tmp_path, monkeypatch):
    """The defaults compile; VEC=3 does not (its static_assert): only `check --all` sees it,
    naming the configuration."""
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    kernel = ORDERED_KERNEL.replace(
        "//   about: a thread an element\n",
        "//   params: {VEC: [1, 2, 3]}\n"
        "//   requires: {n_multiple_of: VEC}\n"
        "//   about: a thread an element: VEC of them\n",
    ).replace(
        '#include "common/dtype.cuh"\n', '#include "common/dtype.cuh"\nstatic_assert(VEC != 3, "no 3");\n'
    )
    ordered_op(tmp_path / "ops", kernel)
    args = ["check", "ordered", "--ops", str(tmp_path / "ops"), "--arch", "sm_80"]
    defaults = runner.invoke(app, args)
    assert defaults.exit_code == 0, defaults.output
    every = runner.invoke(app, [*args, "--all"])
    assert every.exit_code == 1, every.output
    assert "ordered plain[VEC=3] float32 sm_80: COMPILE_ERROR" in every.stderr
    assert "ordered plain[VEC=2] float32 sm_80: ok" in every.stderr and "no 3" in every.stderr


# ---------------------------------------------------------------- 9: what the docs say


def test_9_an_about_holding_a_colon_is_its_text(tmp_path):
    """Header values are YAML, but `about:` is text: a ": " in it (which YAML would read as a
    mapping) is accepted, continuation lines joined, a trailing comment left out, and every
    later key keeps its own line for errors."""
    from cudabench.ops.discovery import discover
    from cudabench.ops.header import KernelHeaderError, parse_header
    from cudabench.ops.header_text import header_op

    kernel = tmp_path / "k.cu"
    header = (
        "// cudabench:\n"
        "//   op: reduce\n"
        "//   variant: mine\n"
        "//   about: sum: float4 loads, then a shuffle  # seed 001\n"
        "//     (rows: any)\n"
        "//   entry: k\n"
        "//   block: {block}\n"
        "//   grid: segments\n"
    )
    kernel.write_text(header.format(block=256))
    variant = parse_header(kernel, "reduce")
    assert variant.about == "sum: float4 loads, then a shuffle (rows: any)"
    assert header_op(kernel) == "reduce"
    found, problems = discover("reduce", [tmp_path])
    assert [v.name for v in found] == ["mine"] and not problems
    kernel.write_text(header.format(block=100))
    with pytest.raises(KernelHeaderError, match=r"k.cu:7: block 100 must be a multiple of 32"):
        parse_header(kernel, "reduce")
    kernel.write_text(header.format(block=256).replace("//   variant: mine", "//   variant: a: b"))
    with pytest.raises(KernelHeaderError, match=r"k.cu:3: header is not valid YAML: .* quote a value"):
        parse_header(kernel, "reduce")


def test_9_the_docs_triton_variant_computes_rmsnorm_in_tritons_interpreter(tmp_path, monkeypatch):
    """docs/guide/ops.md's Triton variant, its kernel run by Triton's CPU interpreter
    (TRITON_INTERPRET=1) on torch CPU tensors against the float64 rmsnorm. Skips unless
    triton and torch import (neither is a dependency; on a GPU, `run` times the variant)."""
    import importlib.util
    import re
    import sys

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read as triton imports
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    import torch

    docs = (Path(__file__).resolve().parent.parent / "docs" / "guide" / "ops.md").read_text()
    (block,) = [
        b for b in re.findall(r"```\w*\n(.*?)```", docs, re.DOTALL) if b.startswith("# rmsnorm/triton_rows")
    ]
    path = tmp_path / "triton_rows.py"
    path.write_text(block)
    spec = importlib.util.spec_from_file_location("docs_triton_rows", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    triton, kernel = module._kernel()
    for rows, cols in ((5, 1000), (3, 8192), (1, 1)):
        x, w = torch.randn(rows, cols), torch.rand(cols) * 1.5 + 0.5
        out = torch.empty_like(x)
        kernel[(rows,)](x, w, out, cols, 1e-6, BLOCK=triton.next_power_of_2(cols))
        x64 = x.double()
        ref = x64 * w.double() / torch.sqrt((x64 * x64).mean(-1, keepdim=True) + 1e-6)
        assert (out.double() - ref).abs().max().item() < 1e-5 * ref.abs().max().item() + 1e-6


def test_9_every_cb_helper_of_dtype_cuh_is_in_the_kernel_guide():
    """docs/guide/kernels.md gives the signature of each helper kernels/common/dtype.cuh
    defines (a helper added there without its line in the guide fails here)."""
    import re

    root = Path(__file__).resolve().parent.parent
    header = (root / "kernels" / "common" / "dtype.cuh").read_text()
    body = header[header.index("namespace cb {") :]
    names = set(re.findall(r"(?:__forceinline__|inline)\s+[\w:<>]+\s+(\w+)\s*(?:<[^>]*>)?\s*\(", body))
    names |= set(re.findall(r"\bstruct\s+(\w+)", body)) | set(re.findall(r"constexpr int (\w+) =", body))
    assert {"to_float", "from_float", "load16", "store16_stream", "word", "cp_async16", "Vec"} <= names
    guide = (root / "docs" / "guide" / "kernels.md").read_text()
    missing = sorted(n for n in names if not re.search(rf"`[^`]*\b{n}\b[^`]*`", guide))
    assert not missing, f"kernels.md does not give the signature of {missing}"


# ---------------------------------------------------------------- 6: the profile hint, pasted


def test_6_the_profile_hint_of_a_user_op_works_when_pasted(tmp_path, monkeypatch):
    """`run` on an op from an --ops folder printed `profile it: cudabench profile rms_lite ...`
    without --ops: pasted, "unknown op". Pasted now (from another folder), it parses and
    names the op, its dtype and the folder."""
    import shlex

    made = runner.invoke(app, ["new", "op", "rms_lite", "--in", str(tmp_path / "mine")])
    assert made.exit_code == 0, made.output
    monkeypatch.chdir(tmp_path)
    env = {"CUDABENCH_BACKEND": "fake"}
    ran = runner.invoke(
        app,
        [
            "run",
            "rms_lite",
            "--ops",
            "mine",
            "-s",
            "16x300",
            "-d",
            "float16",
            *QUICK,
            "-o",
            str(tmp_path / "out"),
        ],
        env=env,
    )
    assert ran.exit_code == 0, ran.output
    hint = next(line for line in ran.stderr.splitlines() if line.startswith("profile it: "))
    words = shlex.split(hint.removeprefix("profile it: ").split("   (or by hand")[0])
    assert words[:3] == ["cudabench", "profile", "rms_lite"], words
    assert ["--ops", str((tmp_path / "mine").resolve())] == words[words.index("--ops") :][:2]
    assert ["--dtype", "float16"] == words[words.index("--dtype") :][:2]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    pasted = runner.invoke(app, [*words[1:], "--print-command"], env=env)
    assert pasted.exit_code == 0, pasted.output
    assert "rms_lite" in pasted.stdout and "unknown op" not in pasted.output


# ---------------------------------------------------------------- 2: Ctrl-C under load


def _busy(count: int) -> list:
    """CPU-bound processes, so the commands below run on a loaded machine."""
    import subprocess
    import sys

    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


_SLOW_NVCC = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
exec sleep 120
"""


@pytest.mark.parametrize("group", [True, False], ids=["terminal", "process"])
def test_2_ctrl_c_stops_run_and_check_within_seconds_under_load(tmp_path, group):
    """Both commands at work on a machine with twice as many busy processes as cores: a
    fake-backend `run` of the seeds config (worker processes) and a `check` of the whole
    catalogue (nvcc children that would take two minutes each) stop within 5 s of SIGINT,
    exit 130, with one 'interrupted' line; the run's finished rows are kept in its file,
    marked incomplete."""
    import os
    import sys

    root = Path(__file__).resolve().parent.parent
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(_SLOW_NVCC)
    nvcc.chmod(0o755)
    env = {
        **os.environ,
        "CUDABENCH_BACKEND": "fake",
        "CUDABENCH_DB": str(tmp_path / "h.db"),
        "CUDABENCH_CACHE": str(tmp_path / "cache"),
        "CUDABENCH_NVCC": str(nvcc),
        "PYTHONPATH": str(root),
    }
    cudabench = [sys.executable, "-m", "cudabench"]
    load = _busy(2 * (os.cpu_count() or 1))
    try:
        out = tmp_path / "out.json"
        code, errors, took = interrupt(
            [*cudabench, "run", str(root / "configs" / "seeds.yaml"), "-o", str(out)], env, tmp_path, 8, group
        )
        assert code == 130 and took < 5, (code, took, errors)
        assert "Traceback" not in errors and "finished rows kept" in errors.strip().splitlines()[-1]
        assert json.loads(out.read_text())["meta"]["complete"] is False
        code, errors, took = interrupt(
            [*cudabench, "check", "--arch", "sm_80", "-j", "2"], env, tmp_path, 8, group
        )
        assert code == 130 and took < 5, (code, took, errors)
        assert "Traceback" not in errors and errors.strip().splitlines()[-1].startswith("interrupted")
    finally:
        for process in load:
            process.kill()
            process.wait()
