"""nvcc: every kernel compiles for sm_80 and sm_90, in every dtype it declares (no GPU needed)."""

import dataclasses
from pathlib import Path

import pytest
from conftest import write_kernel

from cudabench.build.compile import compile_variant
from cudabench.build.nvcc import CompileError, parse_ptxas
from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.ops.discovery import discover
from cudabench.ops.header import parse_header
from cudabench.ops.registry import all_ops

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


BUILTIN = [
    (v, d)
    for op in sorted(all_ops())
    for v in discover(op, [BUILTIN_KERNELS])[0]
    if v.kind == "cuda"
    for d in v.dtypes
]


def test_every_op_has_kernels_and_no_header_problems():
    for op in all_ops():
        variants, problems = discover(op, [BUILTIN_KERNELS])
        assert variants and not problems, (op, problems)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    "variant, dtype", BUILTIN, ids=lambda x: x if isinstance(x, str) else f"{x.op}/{x.name}"
)
def test_every_builtin_kernel_compiles(variant, dtype, arch, catalogue_cache, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE", str(catalogue_cache))
    compiled = compile_variant(variant, arch, dtype)
    assert compiled.cubin.stat().st_size > 0
    for res in compiled.launch_resources:
        assert res.registers > 0
        assert res.spill_bytes == 0, f"{variant.name} ({dtype}) spills on {arch}"
    stamp = compiled.cubin.stat().st_mtime_ns
    again = compile_variant(variant, arch, dtype)  # cached: same file and dtype, no recompile
    assert again.cubin == compiled.cubin and again.cubin.stat().st_mtime_ns == stamp


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "name, body, message",
    [
        ("broken", 'extern "C" __global__ void broken() { int x = ; }\n', r"broken\.cu\(\d+\): error"),
        ("absent", "__global__ void mangled() {}\n", r"entry point 'absent'.*found: mangled\b.*extern \"C\""),
    ],
)
def test_compile_errors_say_where_and_why(kernel_dir, tmp_path, monkeypatch, name, body, message):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    path = write_kernel(kernel_dir, name, body)
    with pytest.raises(CompileError, match=message):
        compile_variant(parse_header(path, "reduce"), "sm_90")


@pytest.mark.nvcc
def test_a_header_beside_the_kernel_or_above_it_is_in_the_cache_key(tmp_path, monkeypatch):
    """Editing a header a kernel includes by a relative path recompiles it (tests/corpus's
    kernels share `<op>/<op>.cuh` and `../rows.cuh`)."""
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "ops" / "reduce"
    folder.mkdir(parents=True)
    (folder.parent / "shared.cuh").write_text("#define SCALE 1.0f\n")
    (folder / "mine.cuh").write_text('#include "../shared.cuh"\n#define OFFSET 0.0f\n')
    body = """\
        #include "mine.cuh"
        extern "C" __global__ void mine(const float* x, float* out, float* partials, unsigned* counters,
                                        long long rows, long long cols, int group, int chunks) {
          out[0] = x[0] * SCALE + OFFSET;
        }
        """
    variant = parse_header(write_kernel(folder, "mine", body), "reduce")
    first = compile_variant(variant, "sm_90").cubin
    assert compile_variant(variant, "sm_90").cubin == first
    (folder / "mine.cuh").write_text('#include "../shared.cuh"\n#define OFFSET 1.0f\n')
    second = compile_variant(variant, "sm_90").cubin
    (folder.parent / "shared.cuh").write_text("#define SCALE 2.0f\n")
    third = compile_variant(variant, "sm_90").cubin
    assert len({first, second, third}) == 3


def test_a_rounds_keys_are_each_configurations_own_and_the_cache_says_which_to_compile(tmp_path, monkeypatch):
    """cache_keys hashes a file once for all its configurations (a search's round) and gives
    each the key compile_variant files it under; `uncompiled` is what is not filed yet."""
    from cudabench.build.compile import cache_key, cache_keys, uncompiled

    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path))
    variant = next(v for v in discover("reduce", [BUILTIN_KERNELS])[0] if v.name == "float4")
    configs = [variant.configured({"BLOCK": b, "WARP_ROW_BYTES": 16}) for b in (128, 256, 512)]
    keys = cache_keys(configs, "sm_90", "float32")
    assert keys == [cache_key(v, "sm_90", "float32") for v in configs] and len(set(keys)) == 3
    assert cache_keys(configs, "sm_80", "float32") != keys and cache_keys(configs, "sm_90", "float16") != keys
    (tmp_path / f"{keys[1]}.cubin").write_bytes(b"cubin")
    (tmp_path / f"{keys[1]}.json").write_text("{}")
    (tmp_path / f"{keys[2]}.cubin").write_bytes(b"cubin")  # no ptxas report: compiled again
    assert uncompiled(configs, "sm_90", "float32") == [configs[0], configs[2]]


SEED000 = Path(__file__).parent / "fixtures" / "seed000" / "ReduceScaleBlockKernel.cu"


@pytest.mark.nvcc
def test_template_entry_is_instantiated_and_found_by_its_demangled_name(tmp_path, monkeypatch):
    """Seed 000's BlockReduce kernel, pasted as printed with only a header added."""
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    variant = parse_header(SEED000, "reduce_scale")
    assert variant.entries == ("ReduceScaleBlockKernel<T, long long>",)
    compiled = compile_variant(variant, "sm_90")
    assert compiled.names == ("_Z22ReduceScaleBlockKernelIfxEvPT_T0_S2_",)
    assert compiled.launch_resources[0].registers > 0


@pytest.mark.nvcc
def test_a_template_instantiation_that_does_not_exist_is_a_compile_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    text = SEED000.read_text().replace(
        "ReduceScaleBlockKernel<T, long long>", "ReduceScaleBlockKernal<T, long long>"
    )
    path = tmp_path / "typo.cu"
    path.write_text(text)
    with pytest.raises(CompileError, match="ReduceScaleBlockKernal"):
        compile_variant(parse_header(path, "reduce_scale"), "sm_90")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_one_source_compiles_once_per_dtype(tmp_path, monkeypatch, arch):
    monkeypatch.setenv("CUDABENCH_CACHE", str(tmp_path / "cache"))
    (variant,) = [v for v in discover("add", [BUILTIN_KERNELS])[0] if v.name == "float4"]
    assert set(variant.dtypes) == {"float32", "float16", "bfloat16"}
    cubins = {dt: compile_variant(variant, arch, dt).cubin for dt in variant.dtypes}
    assert len(set(cubins.values())) == 3  # the cache keys on the dtype
    with pytest.raises(CompileError, match="not float64|is for"):
        compile_variant(dataclasses.replace(variant, dtypes=("float32",)), arch, "float16")
