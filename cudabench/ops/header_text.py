"""A kernel file's header as text: the `// cudabench:` block found in a .cu file and read as
YAML, each key with its own line (header.py checks the keys and makes the KernelVariant).

    header_block   the block's text (the `//` stripped) and the line it starts at
    load_block     its YAML (core/yaml_lines.LineLoader keeps each key's line), with a plain
                   `about:` text quoted when it holds what YAML reads as structure
    Where          file:line of a key, for one-line errors
    header_op      the op a header names with `op:` (discovery sorts files by it)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from cudabench.core.yaml_lines import DuplicateKey, LineLoader

HEADER_START = "// cudabench:"


class KernelHeaderError(ValueError):
    """A .cu file whose header cannot serve; the message names file and line. `problems`
    holds every mistake found in the header, each at its own line (the message is the
    first)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [message])


class OtherOp(KernelHeaderError):
    """The header names another op (`op: reduce`) than the one asked for."""


def header_block(text: str, path: Path) -> tuple[str, int]:
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.strip() == HEADER_START:
            body = []
            for follow in lines[start + 1 :]:
                stripped = follow.strip()
                if not stripped.startswith("//") or not stripped[2:].strip():
                    break  # the header ends at the first non-comment or empty `//` line
                body.append(stripped[2:])
            return "\n".join(body), start + 1
    raise KernelHeaderError(f"{path}:1: no '{HEADER_START}' header (see docs/reference/header.md)")


class Where:
    """File:line for a key of the header (its own line, not the header's first)."""

    def __init__(self, path: Path, header_line: int) -> None:
        self.path, self.header_line = path, header_line

    def __call__(self, mapping: Any = None, key: str | None = None) -> str:
        line = getattr(mapping, "lines", {}).get(key) if key is not None else None
        return f"{self.path}:{self.header_line + line if line else self.header_line}"


_ABOUT = re.compile(r"^(\s*)about:[ \t]+(\S.*)$")


def _about_quoted(block: str) -> str | None:
    """The header with its `about:` text quoted, when that text is plain and holds what YAML
    reads as structure (`about: sum: float4 loads`, whose ": " would start a mapping), or
    None when there is nothing to quote. Lines continuing the text are joined into it and
    left blank, so every other key keeps its line. A trailing ` # comment` stays a comment."""
    lines = block.split("\n")
    for i, line in enumerate(lines):
        m = _ABOUT.match(line)
        if not m or m.group(2)[0] in "'\"|>[{&*!":
            continue
        indent = len(m.group(1))
        parts, end = [m.group(2)], i + 1
        while end < len(lines) and lines[end].strip() and len(lines[end]) - len(lines[end].lstrip()) > indent:
            parts.append(lines[end].strip())
            end += 1
        text = " ".join(part.split(" #")[0].strip() for part in parts if not part.startswith("#"))
        lines[i] = f"{m.group(1)}about: {json.dumps(text)}"  # a JSON string is a YAML one
        lines[i + 1 : end] = [""] * (end - i - 1)
        return "\n".join(lines)
    return None


def load_block(block: str) -> Any:
    """A header's YAML (LineLoader): as written, or, where that fails and the `about:` text
    is plain, with that text quoted (a ": " in it is text the user wrote, not a mapping).
    A mistake elsewhere is then reported from the quoted text: every line keeps its number."""
    try:
        return yaml.load(block, Loader=LineLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKey:
        raise
    except yaml.YAMLError:
        quoted = _about_quoted(block)
        if quoted is None:
            raise
    return yaml.load(quoted, Loader=LineLoader)  # noqa: S506


def header_op(path: Path, text: str | None = None) -> str | None:
    """The op a file's header names with `op:`, or None (no such key, or no usable header)."""
    try:
        text = path.read_text() if text is None else text
        raw = load_block(header_block(text, path)[0])
    except (OSError, UnicodeDecodeError, KernelHeaderError, yaml.YAMLError):
        return None
    value = raw.get("op") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None
