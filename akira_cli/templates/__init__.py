"""Report, hook and prompt templates ($name placeholders, string.Template)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from string import Template
from typing import Any


@cache
def template(name: str) -> Template:
    return Template(files(__name__).joinpath(name).read_text(encoding="utf-8"))


def render(name: str, **values: Any) -> str:
    return template(name).safe_substitute({k: str(v) for k, v in values.items()})
