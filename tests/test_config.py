from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cudabench.core.records import Case
from cudabench.core.timing import TimingOptions
from cudabench.execution.config import ConfigError, builtin_config, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_builtin_reduce_config_loads():
    config = load_config(builtin_config("reduce"))
    (bench,) = config.benchmarks
    assert bench.op == "reduce"
    assert (442368, 128) in bench.shapes and (1 << 30,) in bench.shapes
    assert config.timing.min_samples >= 1


def test_single_benchmark_form(tmp_path):
    config = load_config(
        write(
            tmp_path,
            "op: reduce\nshapes: [3x5, 2^20]\nvariants: [float4]\ntiming: {cold: true, max_time_s: 2}\n",
        )
    )
    (bench,) = config.benchmarks
    assert bench.shapes == ((3, 5), (1 << 20,)) and bench.variants == ("float4",)
    assert config.timing == TimingOptions(cold=True, max_time_s=2.0)
    assert [Case("reduce", shape).id for shape in bench.shapes] == ["3x5/float32", "1048576/float32"]


def test_dtype_reaches_the_benchmark(tmp_path):
    config = load_config(write(tmp_path, "op: reduce\nshapes: [8]\ndtype: float32\n"))
    assert config.benchmarks[0].dtypes == ("float32",)
    config = load_config(write(tmp_path, "op: reduce\nshapes: [8]\ndtypes: [bfloat16, float16]\n"))
    assert config.benchmarks[0].dtypes == ("bfloat16", "float16")
    assert load_config(write(tmp_path, "op: reduce\nshapes: [8]\n")).benchmarks[0].dtypes == ("float32",)


def test_several_benchmarks(tmp_path):
    config = load_config(
        write(tmp_path, "benchmarks:\n  - {op: reduce, shapes: [1]}\n  - {op: reduce, shapes: [2, 3]}\n")
    )
    assert [b.shapes for b in config.benchmarks] == [((1,),), ((2,), (3,))]


@pytest.mark.parametrize(
    "text, message",
    [
        ("op: reduce\nshapes: [1]\nshape: [2]\n", r"c.yaml:3: unknown key 'shape'"),
        ("op: reduce\nshapes: []\n", r"c.yaml:2: shapes must be a non-empty list"),
        ("op: reduce\nshapes: [0x5]\n", r"c.yaml:2: shape '0x5'"),
        ("op: reduce\n", r"needs 'shapes"),
        ("shapes: [1]\n", r"needs 'op"),
        ("op: reduce\nshapes: [1]\ntiming: {min_samples: many}\n", r"c.yaml:3: timing.min_samples"),
        ("op: reduce\nshapes: [1]\ntiming: {min_samples: 0}\n", r"min_samples must be >= 1"),
        ("op: reduce\nshapes: [1]\ntiming: {colt: true}\n", r"unknown key 'colt' in timing"),
        (
            "op: reduce\nshapes: [1]\ntiming: {cold: maybe}\n",
            r"c.yaml:3: timing.cold must be true or false, not 'maybe'",
        ),
        (
            "op: reduce\nshapes: [1]\ntiming: {warmup: -1}\n",
            r"timing.warmup must be a non-negative integer, not -1",
        ),
        ("op: reduce\nshapes: [1\n", r"c.yaml:\d+: not valid YAML"),
        ("", r"empty"),
        ("- a\n- b\n", r"must be a mapping"),
        ("benchmarks: []\n", r"non-empty list"),
        ("benchmarks:\n  - {op: reduce, shapes: [1], extra: 1}\n", r"unknown key 'extra' in a benchmark"),
        (
            "op: reduce\nshapes: [1]\ndtype: float61\n",
            r"c.yaml:3: unknown dtype 'float61' \(did you mean float16",
        ),
        ("op: reduce\nshapes: [1]\ndtypes: [float32, bf16]\n", r"c.yaml:3: unknown dtype 'bf16'"),
        ("op: reduce\nshapes: [1]\ndtype: float32\ndtypes: [float16]\n", r"c.yaml:3: write either dtype"),
        (
            "dtype: float32\ndtypes: [float32]\nbenchmarks:\n  - {op: reduce, shapes: [4x4]}\n",
            r"c.yaml:2: write either dtype or dtypes",
        ),
    ],
)
def test_config_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))


@pytest.mark.parametrize(
    "text, message",
    [
        ("op: reduce\nshapes: [1]\nvariants: [float4, nosuch]\n", r"c.yaml:3: unknown variant 'nosuch'"),
        (
            "benchmarks:\n  - op: reduce\n    shapes: [1]\n  - op: redcue\n    shapes: [1]\n",
            r"c.yaml:4: unknown op",
        ),
    ],
)
def test_the_plan_names_the_config_line_of_an_unknown_variant_or_op(tmp_path, text, message):
    from cudabench.core.errors import SweepError
    from cudabench.execution.plan import plan

    with pytest.raises(SweepError, match=message):
        plan(str(write(tmp_path, text)), None, None, None)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["op", "shapes", "variants", "timing", "bogus"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.text(max_size=6), max_size=3)),
    )
)
def test_any_mapping_loads_or_raises_config_error(tmp_path_factory, raw):
    import yaml

    path = tmp_path_factory.mktemp("cfg") / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    try:
        config = load_config(path)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert config.benchmarks


def test_top_level_dtypes_are_every_benchmarks_default(tmp_path):
    text = (
        "dtypes: [bfloat16]\nbenchmarks:\n  - {op: reduce, shapes: [8]}\n"
        "  - {op: add, shapes: [8], dtype: float16}\n"
    )
    config = load_config(write(tmp_path, text))
    assert [b.dtypes for b in config.benchmarks] == [("bfloat16",), ("float16",)]
