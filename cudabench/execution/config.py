"""YAML configs -> BenchConfig (the CLI turns its benchmarks into Cases).

A config names one op or several, their shapes, optionally which variants, and timing:

    op: reduce                      # one benchmark: op / shapes / variants at the top level
    shapes: [442368x128, 2^30, 1000003]
    variants: [shuffle, float4]     # optional; default: every variant (and the baselines)
    dtypes: [float32, bfloat16]     # optional (default [float32]; `all`: every dtype each
                                    # variant supports); `dtype: float16` names one
    params: {GRID_K: [1, 2, 4, 8]}  # optional: a grid of launch parameters (as --param)
    timing: {cold: false, min_samples: 10, max_time_s: 10}

    benchmarks:                     # or several (a top-level dtypes: is every one's default)
      - {op: reduce, shapes: [2^20, 2^24]}

Every mistake is a ConfigError whose message names the file, the line and the field.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cudabench.backends.cupti_clock import TIMERS
from cudabench.core.dtypes import ALL, DTYPES
from cudabench.core.names import closest
from cudabench.core.paths import BUILTIN_CONFIGS
from cudabench.core.records import Shape
from cudabench.core.shapes import ShapeError, parse_shape
from cudabench.core.timing import TimingOptions
from cudabench.core.yaml_lines import DuplicateKey, LineLoader, Lines, line_at

_TOP_KEYS = {"op", "shapes", "variants", "dtype", "dtypes", "params", "timing", "benchmarks"}
_BENCH_KEYS = {"op", "shapes", "variants", "dtype", "dtypes", "params"}
_TIMING_TYPES: dict[str, type] = {
    f.name: {"float": float, "int": int, "str": str}.get(str(f.type), bool)
    for f in dataclasses.fields(TimingOptions)
}


class ConfigError(ValueError):
    """A config file that cannot be used; one line naming file, line and field."""


@dataclass(frozen=True)
class Benchmark:
    op: str
    shapes: tuple[Shape, ...]
    variants: tuple[str, ...] = ()  # empty: all
    dtypes: tuple[str, ...] = ("float32",)  # or ("all",): every dtype each variant supports
    # a grid of launch parameters, as `--param`: each variant that declares the names runs
    # once per configuration (e.g. {"GRID_K": (1, 2, 4, 8)})
    params: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    # where its op and variants are written (file:line), for the plan's errors about them
    op_at: str = ""
    variants_at: str = ""


@dataclass(frozen=True)
class BenchConfig:
    benchmarks: tuple[Benchmark, ...]
    timing: TimingOptions
    source: str


def _check_keys(mapping: Any, allowed: set[str], where: str, what: str) -> None:
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: {what} must be a mapping of 'key: value'")
    for key in mapping:
        if key not in allowed:
            raise ConfigError(
                f"{line_at(where, mapping, key)}: unknown key {key!r} in {what}"
                f"{closest(str(key), sorted(allowed))}"
            )


def _names(value: Any, where: str, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {field} must be a list of names")
    return tuple(value)


def _benchmark(raw: Any, where: str) -> Benchmark:
    _check_keys(raw, _BENCH_KEYS, where, "a benchmark")
    if not isinstance(raw.get("op"), str):
        raise ConfigError(f"{where}: a benchmark needs 'op: <name>'")
    shapes_raw = raw.get("shapes")
    at = line_at(where, raw, "shapes")
    if shapes_raw is None:
        raise ConfigError(f"{where}: benchmark {raw['op']!r} needs 'shapes: [...]'")
    if not isinstance(shapes_raw, list) or not shapes_raw:
        raise ConfigError(f"{at}: shapes must be a non-empty list, e.g. [442368x128, 2^30]")
    try:
        shapes = tuple(
            parse_shape(int(s) if isinstance(s, float) and s.is_integer() else s) for s in shapes_raw
        )
    except ShapeError as exc:
        raise ConfigError(f"{at}: {exc}") from exc
    variants = _names(raw.get("variants", []), line_at(where, raw, "variants"), "variants")
    if "dtype" in raw and "dtypes" in raw:
        raise ConfigError(f"{line_at(where, raw, 'dtype')}: write either dtype or dtypes")
    key = "dtypes" if "dtypes" in raw else "dtype"
    dtypes = _names(raw.get(key, ["float32"]), line_at(where, raw, key), key)
    for name in dtypes:
        if name not in DTYPES and name != ALL:
            raise ConfigError(
                f"{line_at(where, raw, key)}: unknown dtype {name!r}{closest(str(name), [*DTYPES, ALL])}"
            )
    return Benchmark(
        op=raw["op"],
        shapes=shapes,
        variants=variants,
        dtypes=dtypes,
        params=_params(raw.get("params"), line_at(where, raw, "params")),
        op_at=line_at(where, raw, "op"),
        variants_at=line_at(where, raw, "variants"),
    )


def _params(raw: Any, where: str) -> dict[str, tuple[int, ...]]:
    """`params: {GRID_K: [1, 2, 4]}`: parameter names to lists of integers."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: params must map names to lists of integers, e.g. {{BLOCK: [128, 256]}}")
    found = {}
    for name, values in raw.items():
        values = [values] if isinstance(values, int) and not isinstance(values, bool) else values
        if (
            not isinstance(name, str)
            or not name.isidentifier()
            or not isinstance(values, list)
            or not values
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        ):
            raise ConfigError(f"{line_at(where, raw, name)}: params.{name} must be a list of integers")
        found[name] = tuple(dict.fromkeys(values))
    return found


def timing_from(raw: Any, where: str, base: TimingOptions | None = None) -> TimingOptions:
    """Timing options from a mapping, checked key by key and type by type."""
    base = base or TimingOptions()
    if raw is None:
        return base
    _check_keys(raw, set(_TIMING_TYPES), where, "timing")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        kind = _TIMING_TYPES[key]
        if key == "timer":  # the only text option: a clock's name
            if value not in TIMERS:
                raise ConfigError(
                    f"{line_at(where, raw, key)}: timing.timer must be one of "
                    f"{', '.join(TIMERS)}, not {value!r}"
                )
            values[key] = value
            continue
        if kind is str:  # settle, fill, clocks: checked against their choices by plan()
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ConfigError(
                    f"{line_at(where, raw, key)}: timing.{key} must be a word "
                    f"(or, for clocks, MHz), not {value!r}"
                )
            values[key] = str(value)
            continue
        ok = (
            isinstance(value, bool)
            if kind is bool
            else (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and (kind is float or isinstance(value, int))
                and value >= 0
            )
        )
        if not ok:
            what = (
                "true or false"
                if kind is bool
                else f"a non-negative {'number' if kind is float else 'integer'}"
            )
            raise ConfigError(f"{line_at(where, raw, key)}: timing.{key} must be {what}, not {value!r}")
        values[key] = kind(value)
    if values.get("min_samples", 1) < 1:
        raise ConfigError(f"{line_at(where, raw, 'min_samples')}: timing.min_samples must be >= 1")
    return dataclasses.replace(base, **values)


def find_config(path: Path) -> Path:
    """A config path as given, or, when it is relative and not there, the same name in the
    installed configs folder (so `configs/seeds.yaml` works from any directory)."""
    if path.is_file() or path.is_absolute():
        return path
    for candidate in (BUILTIN_CONFIGS.parent / path, BUILTIN_CONFIGS / path.name):
        if candidate.is_file():
            return candidate
    return path


def load_config(path: Path) -> BenchConfig:
    """Read and check a config file (see find_config). Raises ConfigError."""
    path = find_config(path)
    where = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from exc
    try:
        raw = yaml.load(text, Loader=LineLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKey as exc:
        raise ConfigError(f"{where}:{exc.line + 1}: {exc.said(exc.first_line + 1)}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{at}: not valid YAML: {problem}") from exc
    if raw is None:
        raise ConfigError(f"{where}: the config is empty")
    _check_keys(raw, _TOP_KEYS, where, "the config")
    if "benchmarks" in raw:
        if {"op", "shapes", "variants"} & set(raw):
            raise ConfigError(f"{where}: write either 'benchmarks:' or op/shapes/variants")
        items = raw["benchmarks"]
        if not isinstance(items, list) or not items:
            raise ConfigError(f"{line_at(where, raw, 'benchmarks')}: benchmarks must be a non-empty list")
        if "dtype" in raw and "dtypes" in raw:
            raise ConfigError(f"{line_at(where, raw, 'dtypes')}: write either dtype or dtypes")
        default = {k: raw[k] for k in ("dtype", "dtypes", "params") if k in raw}  # every benchmark's
        benchmarks = tuple(_benchmark(_with_default(item, default), where) for item in items)
    else:
        single = Lines({k: v for k, v in raw.items() if k in _BENCH_KEYS})
        single.lines = getattr(raw, "lines", {})
        benchmarks = (_benchmark(single, where),)
    timing = timing_from(raw.get("timing"), where)
    return BenchConfig(benchmarks=benchmarks, timing=timing, source=where)


def _with_default(item: Any, default: dict[str, Any]) -> Any:
    """A benchmark with the config's top-level dtype(s) and params, unless it names its own."""
    if not isinstance(item, dict) or not default:
        return item
    own = set(item)
    inherited = {
        k: v
        for k, v in default.items()
        if k not in own and not (k in ("dtype", "dtypes") and {"dtype", "dtypes"} & own)
    }
    merged = Lines({**item, **inherited})
    merged.lines = getattr(item, "lines", {})
    return merged


def builtin_config(op: str) -> Path:
    return BUILTIN_CONFIGS / f"{op}.yaml"
