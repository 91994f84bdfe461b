"""YAML read with bounds: size, nesting depth and aliases (no alias bombs, docs/guarantees.md), and no
key twice in one mapping (PyYAML keeps the last one silently).

PyYAML's `safe_load` builds an alias once and shares it, but anything that walks the result
(pydantic, `str()`, a comparison) walks it exponentially. Config files and hook front matter are
small and hand-written, so a handful of aliases and a shallow tree are plenty.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 256_000
MAX_DEPTH = 20
MAX_ALIASES = 10


class BoundsError(ValueError):
    """The document is over one of the bounds; the message says which."""


class DuplicateKeyError(BoundsError):
    """A key given twice in one mapping; the message names it and both lines."""

    def __init__(self, key: str, first: int, second: int) -> None:
        super().__init__(f"key '{key}' is given twice, on lines {first} and {second}")
        self.key, self.first, self.second = key, first, second


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise BoundsError(f"more than {MAX_ALIASES} aliases ('*name')")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise BoundsError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    raise DuplicateKeyError(key_node.value, seen[key_node.value], line)
                seen[key_node.value] = line
        return super().construct_mapping(node, deep)


def load(text: str, *, max_bytes: int = MAX_BYTES) -> Any:
    """Parses one YAML document; raises `yaml.YAMLError` or `BoundsError`."""
    if len(text) > max_bytes:
        raise BoundsError(f"larger than {max_bytes} bytes")
    if "\x00" in text:
        raise BoundsError("it holds a NUL byte (a binary file?)")
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
