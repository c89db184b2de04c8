"""nvcc: every kernel compiles for sm_80 and sm_90 (no GPU needed)."""

import pytest

from cudabench.compile import CompileError, compile_variant, parse_ptxas
from cudabench.kernels import BUILTIN_KERNELS, discover, parse_header
from cudabench.ops import OPS
from conftest import write_kernel

REPORT = """ptxas info    : Compiling entry function 'reduce_sum_float4' for 'sm_90'
ptxas info    : Function properties for reduce_sum_float4
    8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 44 registers, used 1 barriers, 129 bytes smem
ptxas info    : Compiling entry function 'other' for 'sm_90'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers
"""


def test_parse_ptxas_report():
    found = parse_ptxas(REPORT)
    assert found["reduce_sum_float4"].registers == 44
    assert found["reduce_sum_float4"].spill_bytes == 12
    assert found["reduce_sum_float4"].shared_bytes == 129
    assert found["other"].registers == 16 and found["other"].spill_bytes == 0


BUILTIN = [v for op in sorted(OPS) for v in discover(op, [BUILTIN_KERNELS])[0]]


def test_every_op_has_kernels_and_no_header_problems():
    for op in OPS:
        variants, problems = discover(op, [BUILTIN_KERNELS])
        assert variants and not problems, (op, problems)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("variant", BUILTIN, ids=lambda v: f"{v.op}/{v.name}")
def test_every_builtin_kernel_compiles(variant, arch, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path))
    compiled = compile_variant(variant, arch)
    assert compiled.cubin.stat().st_size > 0
    for entry in variant.entries:
        assert compiled.resources[entry].registers > 0
        assert compiled.resources[entry].spill_bytes == 0, f"{variant.name} spills on {arch}"
    again = compile_variant(variant, arch)  # cached: same file, no recompile
    assert again.cubin == compiled.cubin


@pytest.mark.nvcc
@pytest.mark.parametrize("name, body, message", [
    ("broken", 'extern "C" __global__ void broken() { int x = ; }\n', r"broken\.cu\(\d+\): error"),
    ("absent", "__global__ void mangled() {}\n", r"entry point\(s\) \['absent'\].*extern \"C\""),
])
def test_compile_errors_say_where_and_why(kernel_dir, tmp_path, monkeypatch, name, body, message):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    path = write_kernel(kernel_dir, name, body)
    with pytest.raises(CompileError, match=message):
        compile_variant(parse_header(path, "reduce"), "sm_90")
