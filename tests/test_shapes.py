import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudabench.core.records import Case
from cudabench.core.shapes import ShapeError, parse_shape


@pytest.mark.parametrize(
    "text, shape",
    [
        ("442368x128", (442368, 128)),
        ("1073741824", (1073741824,)),
        ("2^30", (1 << 30,)),
        ("2^10x128", (1024, 128)),
        ("1e6", (1_000_000,)),
        ("1.5e3", (1500,)),
        (" 3X5 ", (3, 5)),
        (7, (7,)),
    ],
)
def test_parse_good(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize(
    "text, words",
    [
        ("442368x", "empty dimension"),
        ("0x5", "positive"),
        ("-1", "positive"),
        ("abc", "not a number"),
        ("1.25e1", "not a whole number"),
        ("", "empty"),
        ("2^99", "too large"),
        ("4x2^41", "larger than"),
    ],
)
def test_parse_bad_names_the_problem(text, words):
    with pytest.raises(ShapeError, match=words):
        parse_shape(text)


@given(st.lists(st.integers(min_value=1, max_value=1 << 40), min_size=1, max_size=4))
def test_format_parse_roundtrip(dims):
    shape = tuple(dims)
    assert parse_shape(Case("reduce", shape).shape_text) == shape  # how rows write shapes


@given(st.text(max_size=20))
def test_any_text_parses_or_raises_shape_error(text):
    try:
        shape = parse_shape(text)
    except ShapeError:
        return
    assert shape and all(isinstance(d, int) and d > 0 for d in shape)
