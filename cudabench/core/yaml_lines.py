"""YAML that remembers the line of every key, so configs and kernel headers can name the
exact line of a mistake (`configs/x.yaml:7: unknown key 'shape' (did you mean shapes?)`), and
refuses a key written twice in one mapping (plain YAML keeps the last silently: a config with
two `op:` would run the second op): a DuplicateKey error at the second one's line."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml


class Lines(dict[Hashable, Any]):
    """A mapping that remembers the line of each key (1-based)."""

    lines: dict[str, int]


class DuplicateKey(yaml.constructor.ConstructorError):
    """A key written twice in one mapping. `problem_mark` is the second one's place (as for
    any YAML error); `first_line` and `line` the first and the second one's lines (0-based,
    as marks count)."""

    def __init__(self, key: str, first: yaml.Mark, second: yaml.Mark) -> None:
        super().__init__(None, None, f"the key {key!r} is written twice (each key once)", second)
        self.key, self.first_line, self.line = key, first.line, second.line

    def said(self, first_line: int) -> str:
        """The problem, with the first one's line as the file numbers it."""
        return f"the key {self.key!r} is written twice (first at line {first_line}; each key once)"


class LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Lines:
        seen: dict[Hashable, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults`: merged keys may be overridden
            key = self.construct_object(key_node)
            if isinstance(key, Hashable):
                if key in seen:
                    raise DuplicateKey(str(key), seen[key], key_node.start_mark)
                seen[key] = key_node.start_mark
        mapping = Lines(super().construct_mapping(node, deep=True))
        mapping.lines = {str(self.construct_object(k)): k.start_mark.line + 1 for k, _ in node.value}
        return mapping


def _decimal_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | str:
    """YAML 1.1 reads 0x5 as 5 and 010 as 8; a shape `0x5` must stay the text the user wrote."""
    text = loader.construct_scalar(node)
    return int(text, 10) if re.fullmatch(r"[-+]?[0-9]+", text) else text


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, LineLoader.construct_mapping)
LineLoader.add_constructor("tag:yaml.org,2002:int", _decimal_int)


def line_at(where: str, mapping: Any, key: str) -> str:
    line = getattr(mapping, "lines", {}).get(key)
    return f"{where}:{line}" if line else where
