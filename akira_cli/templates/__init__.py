"""Report, hook and prompt templates ($name placeholders, string.Template), filled strictly."""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from string import Template
from typing import Any


@cache
def template(name: str) -> Template:
    return Template(files(__name__).joinpath(name).read_text(encoding="utf-8"))


def render(name: str, **values: Any) -> str:
    """`name` filled with `values`. A placeholder without a value (a misspelt name on either side)
    or a lone `$` raises ValueError: nothing half-filled is ever sent or written."""
    text = template(name)
    missing = sorted(set(text.get_identifiers()) - values.keys())
    if missing or not text.is_valid():
        raise ValueError(f"template {name}: no value for {', '.join(missing) or 'a lone $'}")
    return text.substitute({key: str(value) for key, value in values.items()})
