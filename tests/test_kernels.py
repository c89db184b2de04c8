import pytest

from cudabench.kernels import BUILTIN_KERNELS, KernelHeaderError, discover, parse_header, user_roots
from conftest import write_kernel

GOOD = """// cudabench:
//   variant: mine
//   entry: my_entry
//   block: 128
//   grid: segments
//   init: zero
//   requires: {cols_multiple_of: 4}
//   about: >
//     a test kernel
//     over two lines
//
// free text after an empty comment line is not part of the header: key: value
"""


def test_parse_good_header(tmp_path):
    variant = parse_header(tmp_path / "k.cu", "reduce", GOOD)
    assert variant.name == "mine" and variant.entries == ("my_entry",)
    assert variant.launches[0].block == 128 and variant.launches[0].grid == "segments"
    assert variant.init == "zero" and variant.requires == (("cols_multiple_of", 4),)
    assert variant.about == "a test kernel over two lines"


def test_multi_launch_header(tmp_path):
    text = ("// cudabench:\n//   variant: two\n//   about: two kernels\n//   launches:\n"
            "//     - {entry: a, block: 256, grid: segments}\n"
            "//     - {entry: b, block: 32, grid: elements}\n")
    variant = parse_header(tmp_path / "k.cu", "reduce", text)
    assert variant.entries == ("a", "b") and variant.launches[1].block == 32


@pytest.mark.parametrize(
    "change, message",
    [
        (("//   block: 128\n", ""), r"header needs \['block'\]"),
        (("//   block: 128\n", "//   block: 100\n"), "multiple of 32"),
        (("//   block: 128\n", "//   block: 2048\n"), "1..1024"),
        (("//   init: zero\n", "//   init: ones\n"), "init 'ones'"),
        (("//   init: zero\n", "//   colour: red\n"), r"unknown header key\(s\) \['colour'\]"),
        (("//   entry: my_entry\n", "//   entry: 'my entry'\n"), "not a C identifier"),
        (("//   variant: mine\n", ""), "needs 'variant"),
        (("//   grid: segments\n", "//   grid: [a\n"), "not valid YAML"),
        (("// cudabench:\n", "// benchmark:\n"), "no '// cudabench:' header"),
    ],
)
def test_bad_headers_name_file_line_and_reason(tmp_path, change, message):
    text = GOOD.replace(*change)
    with pytest.raises(KernelHeaderError, match=message) as info:
        parse_header(tmp_path / "k.cu", "reduce", text)
    assert str(info.value).startswith(str(tmp_path / "k.cu") + ":")


def test_builtin_reduce_variants_are_discovered():
    variants, problems = discover("reduce", [BUILTIN_KERNELS])
    assert problems == []
    assert {v.name for v in variants} == {"naive", "shared", "shuffle", "float4", "atomic"}
    assert all(v.about and "seed" in v.about for v in variants)


def test_user_kernels_join_and_duplicates_are_reported(kernel_dir):
    write_kernel(kernel_dir, "mine", "")
    write_kernel(kernel_dir, "float4", "")  # clashes with the built-in float4
    (kernel_dir / "broken.cu").write_text("// cudabench:\n//   variant: broken\n")
    variants, problems = discover("reduce", [BUILTIN_KERNELS, kernel_dir])
    assert "mine" in {v.name for v in variants}
    assert any("already defined" in p and "float4.cu" in p for p in problems)
    assert any("broken.cu" in p for p in problems)
    assert len([v for v in variants if v.name == "float4"]) == 1


def test_user_kernels_in_op_subfolder(tmp_path):
    write_kernel(tmp_path / "reduce", "sub", "")
    variants, _ = discover("reduce", [tmp_path])
    assert [v.name for v in variants] == ["sub"]


def test_user_roots_rejects_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        user_roots([tmp_path / "nope"])
    assert user_roots([tmp_path]) == [tmp_path]
