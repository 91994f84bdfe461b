"""Finding a CLI's JSON in its output, which may carry warnings and progress lines around it."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict


def json_objects(output: str) -> list[dict[str, Any]]:
    """Every line that is a JSON object, in order; else the whole output as one, if it is one."""
    found = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    if found:
        return found
    start, end = output.find("{"), output.rfind("}")
    if 0 <= start < end:
        try:
            value = json.loads(output[start : end + 1])
        except ValueError:
            return []
        if isinstance(value, dict):
            return [value]
    return []


def number(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def last_object(text: str, *keys: str) -> dict[str, Any] | None:
    """The last JSON object in `text` that has one of `keys`, even pretty-printed over many lines
    and after stack traces (Gemini CLI's errors on stderr)."""
    decoder = json.JSONDecoder()
    found = None
    at = text.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and any(key in value for key in keys):
            found = value
        at = text.find("{", end)
    return found


# Lenient parts of the models of what the CLIs print: a field of an unexpected type reads as if
# it were absent, and fields the models do not name are ignored, so a CLI that adds or changes
# a field still yields whatever it said that akira knows.


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _money(value: Any) -> float:
    try:
        amount = float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return amount if math.isfinite(amount) else 0.0


Count = Annotated[int, BeforeValidator(number)]
"""A token or request count: a number, else 0."""
Money = Annotated[float, BeforeValidator(_money)]
Text = Annotated[str, BeforeValidator(lambda value: str(value) if value else "")]
"""Any value as text; none (or an empty one) as ""."""
Name = Annotated[str | None, BeforeValidator(lambda value: value if isinstance(value, str) else None)]
"""A string or nothing: a session or thread id."""
Status = Annotated[
    int | None,
    BeforeValidator(lambda value: value if isinstance(value, int) and not isinstance(value, bool) else None),
]
"""An HTTP status given as a JSON number."""
ObjectOrNone = BeforeValidator(lambda value: value if isinstance(value, dict) else None)
"""For a nested model: read only from a JSON object, else absent."""
ObjectOrEmpty = BeforeValidator(lambda value: value if isinstance(value, dict) else {})
"""For a nested model: read only from a JSON object, else as an empty one."""
Objects = BeforeValidator(
    lambda value: [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
)
"""For a list of nested models: its JSON objects; anything else in it is passed over."""
ObjectValues = BeforeValidator(
    lambda value: {k: v for k, v in value.items() if isinstance(v, dict)} if isinstance(value, dict) else {}
)
"""For a map of nested models: its entries that are JSON objects."""

M = TypeVar("M", bound=BaseModel)


def last_of(model: type[M], objects: list[dict[str, Any]], *keys: str) -> M | None:
    """The last of `objects` that has one of `keys`, read as `model`."""
    found = [o for o in objects if any(key in o for key in keys)]
    return model.model_validate(found[-1]) if found else None
