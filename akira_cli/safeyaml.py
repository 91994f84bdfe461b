"""YAML read with bounds: size, nesting depth and aliases (SPEC 11, no alias bombs).

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
