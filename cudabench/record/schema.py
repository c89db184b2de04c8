"""The results file's schema, and the one reader that checks a file against it field by field.

The schema is declared once, by the frozen records in spec.py: each field's type hint says
what a JSON value must be (`int`, `float`, `str`, `bool`, `X | None`, `tuple[int, int]`,
`tuple[float, ...]`, `dict[str, float]`, an enum, a nested record). `read_record` builds a
record from a parsed JSON object and raises `SchemaError` naming the first field that does
not fit (`rows[3].time_us: expected a number, got 'fast'`), so a hand-edited, truncated or
foreign file is one line, never a TypeError deep in a table. Every reader of results files
(`compare`, `report`, the history import) goes through `results.read_results`, which uses
this.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar, cast, get_args, get_origin

T = TypeVar("T")


class SchemaError(ValueError):
    """A value that does not fit its field; the message starts with the field's path."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _member(where: str, key: object) -> str:
    """`where.key`, with a key that is not a plain name quoted (`meta['a\\nb']`), so a
    hand-edited key with a newline or a dot still gives a one-line message."""
    text = str(key)
    return f"{where}.{text}" if text.isidentifier() else f"{where}[{text!r}]"


def _check(hint: Any, value: Any, where: str) -> Any:
    """`value` converted to what `hint` declares, or SchemaError."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = get_args(hint)
        if value is None:
            if type(None) in options:
                return None
            raise SchemaError(f"{where}: must not be null")
        last: SchemaError | None = None
        for option in options:
            if option is type(None):
                continue
            try:
                return _check(option, value, where)
            except SchemaError as exc:
                last = exc
        assert last is not None
        raise last
    if value is None:
        raise SchemaError(f"{where}: must not be null")
    if hint is bool:
        if not isinstance(value, bool):
            raise SchemaError(f"{where}: expected true or false, got {_describe(value)}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"{where}: expected an integer, got {_describe(value)}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SchemaError(f"{where}: expected a number, got {_describe(value)}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise SchemaError(f"{where}: expected text, got {_describe(value)}")
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except (ValueError, TypeError):
            choices = ", ".join(str(m.value) for m in hint)
            raise SchemaError(f"{where}: {_describe(value)} is not one of {choices}") from None
    if dataclasses.is_dataclass(hint):
        return read_record(hint, value, where)  # type: ignore[arg-type]
    if origin is tuple:
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected a list, got {_describe(value)}")
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_check(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise SchemaError(f"{where}: expected {len(args)} values, got {len(value)}")
        return tuple(_check(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object, got {_describe(value)}")
        key_hint, value_hint = get_args(hint)
        return {
            _check(key_hint, k, where): _check(value_hint, v, _member(where, k)) for k, v in value.items()
        }
    raise TypeError(f"schema: no rule for the type {hint!r} of {where}")  # a bug in spec.py


def read_record(cls: type[T], raw: Any, where: str, derived: tuple[str, ...] = ()) -> T:
    """Build the frozen record `cls` from a JSON object, checking every field against its
    type hint. `derived` names keys the writer adds for readers (skipped here). Unknown
    keys and missing keys without a default are errors."""
    if not isinstance(raw, dict):
        raise SchemaError(f"{where}: expected an object, got {_describe(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields) - set(derived))
    if unknown:
        raise SchemaError(f"{_member(where, unknown[0])}: unknown field")
    values = {}
    for name, f in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in raw:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if not has_default:
                raise SchemaError(f"{path}: missing")
            continue
        values[name] = _check(_hints(cast(type, cls))[name], raw[name], path)  # type[T] is hashable
    return cls(**values)
