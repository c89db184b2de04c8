import pytest
from conftest import write_kernel

from cudabench.core.paths import BUILTIN_KERNELS
from cudabench.ops.discovery import discover, unassigned, user_roots
from cudabench.ops.header import KernelHeaderError, parse_header

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
    text = (
        "// cudabench:\n//   variant: two\n//   about: two kernels\n//   launches:\n"
        "//     - {entry: a, block: 256, grid: segments}\n"
        "//     - {entry: b, block: 32, grid: elements}\n"
    )
    variant = parse_header(tmp_path / "k.cu", "reduce", text)
    assert variant.entries == ("a", "b") and variant.launches[1].block == 32


@pytest.mark.parametrize(
    "change, message",
    [
        (("//   block: 128\n", ""), r"header needs \['block'\]"),
        (("//   block: 128\n", "//   block: 100\n"), "multiple of 32"),
        (("//   block: 128\n", "//   block: 2048\n"), "1..1024"),
        (("//   init: zero\n", "//   init: ones\n"), "init 'ones'"),
        (("//   init: zero\n", "//   colour: red\n"), r"unknown header key 'colour'"),
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


# --- what `check` can know without a GPU: every mistake at its own line, with a did-you-mean ---


@pytest.mark.parametrize(
    "change, line, message",
    [
        (
            ("//   grid: segments\n", "//   grid: segment\n"),
            5,
            r"reduce has no grid rule 'segment' \(did you mean segments",
        ),
        (("//   grid: segments\n", "//   grid: element\n"), 5, r"did you mean elements"),
        (
            ("{cols_multiple_of: 4}", "{cols_multiple_off: 4}"),
            7,
            r"cannot check requires 'cols_multiple_off' \(did you mean cols_multiple_of",
        ),
        (("//   init: zero\n", "//   init: zeros\n"), 6, r"init 'zeros' \(did you mean zero"),
        (
            ("//   entry: my_entry\n", "//   entyr: my_entry\n"),
            3,
            r"unknown header key 'entyr' \(did you mean entry",
        ),
        (("//   block: 128\n", "//   block: 100\n"), 4, "multiple of 32"),
        (
            ("//   variant: mine\n", "//   variant: mine\n//   op: reduse\n"),
            3,
            r"unknown op 'reduse' \(did you mean reduce",
        ),
    ],
)
def test_header_mistakes_are_reported_at_their_line(tmp_path, change, line, message):
    text = GOOD.replace(*change)
    with pytest.raises(KernelHeaderError, match=message) as info:
        parse_header(tmp_path / "k.cu", "reduce", text)
    assert str(info.value).startswith(f"{tmp_path / 'k.cu'}:{line}: ")


def test_grid_rule_of_a_multi_launch_variant_is_checked(tmp_path):
    text = (
        "// cudabench:\n//   variant: two\n//   about: two kernels\n//   launches:\n"
        "//     - {entry: a, block: 256, grid: segments}\n"
        "//     - {entry: b, block: 32, grid: rows}\n"
    )
    with pytest.raises(KernelHeaderError, match=r"k.cu:6: reduce has no grid rule 'rows'"):
        parse_header(tmp_path / "k.cu", "reduce", text)


def _flat_folder(tmp_path):
    write_kernel(tmp_path, "anyop", "")  # no op: key
    write_kernel(
        tmp_path,
        "mine_reduce",
        "",
        header=GOOD.replace("variant: mine", "variant: mine_reduce\n//   op: reduce"),
    )
    return tmp_path


def test_flat_folder_file_with_op_joins_only_that_op(tmp_path):
    folder = _flat_folder(tmp_path)
    reduce_names = {v.name for v in discover("reduce", [folder])[0]}
    add_variants, add_problems = discover("add", [folder])
    assert reduce_names == {"anyop", "mine_reduce"}
    assert add_variants == []  # the reduce file is not an add variant...
    # ...and the op-less one joins the op asked for, so add's rules check it
    assert len(add_problems) == 1 and "anyop.cu:5: add has no grid rule 'segments'" in add_problems[0]


def test_unassigned_lists_flat_files_without_op(tmp_path):
    folder = _flat_folder(tmp_path)
    assert [p.name for p in unassigned([folder])] == ["anyop.cu"]
    assert unassigned([BUILTIN_KERNELS]) == []


def test_file_in_an_op_folder_naming_another_op_is_a_problem(tmp_path):
    write_kernel(
        tmp_path / "reduce", "x", "", header=GOOD.replace("variant: mine", "variant: x\n//   op: add")
    )
    variants, problems = discover("reduce", [tmp_path])
    assert variants == [] and "a add kernel, not reduce" in problems[0]
