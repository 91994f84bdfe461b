"""Prompt templates are data: `akira_cli/templates/reasoning_*.md`, filled with `string.Template`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from akira_cli import templates


def render(name: str, **values: Any) -> str:
    """Fills `reasoning_<name>.md`; models and lists are shown as indented JSON."""
    return templates.render(f"reasoning_{name}.md", **{key: _show(value) for key, value in values.items()})


def messages(name: str, **values: Any) -> list[dict[str, Any]]:
    """The system prompt plus one filled template as the user turn."""
    return [
        {"role": "system", "content": render("system")},
        {"role": "user", "content": render(name, **values)},
    ]


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2, exclude_none=True)
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return json.dumps([item.model_dump(mode="json", exclude_none=True) for item in value], indent=2)
    return json.dumps(value, indent=2, default=str)
