"""YAML that remembers the line of every key, so configs and kernel headers can name the
exact line of a mistake (`configs/x.yaml:7: unknown key 'shape' (did you mean shapes?)`)."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import yaml


class Lines(dict[Hashable, Any]):
    """A mapping that remembers the line of each key (1-based)."""

    lines: dict[str, int]


class LineLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Lines:
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
