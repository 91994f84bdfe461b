"""What the host mends in a structured reply before it asks the model again (JSON repair).

Only what can be mended without guessing meaning, each with a note naming the field:
- a number outside its bounds is clamped to them (`information_sufficiency: 1.5` becomes 1);
- an enum value in another letter case, or with spaces around it, is matched (`" High"` is `high`);
- keys the schema does not know are dropped.

Everything else is left as it is, for the schema's validation to report and the model to repair.
Small local models answer like this all the time, and each repair is a whole call.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel


@functools.cache
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def mend(value: Any, model: type[BaseModel]) -> tuple[Any, list[str]]:
    """`value` (parsed JSON) mended against `model`'s schema, and a note per mended field."""
    schema = json_schema(model)
    notes: list[str] = []
    return _mend(value, schema, schema.get("$defs", {}), "", notes), notes


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 32:
        node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {})
        seen += 1
    return node


def _mend(value: Any, node: dict[str, Any], defs: dict[str, Any], where: str, notes: list[str]) -> Any:
    node = _resolve(node, defs)
    if "anyOf" in node:  # Optional[...] and unions: mend by the branch of the value's own kind
        branches = [_resolve(branch, defs) for branch in node["anyOf"]]
        fitting = next((branch for branch in branches if _kind_fits(value, branch)), None)
        return value if fitting is None else _mend(value, fitting, defs, where, notes)
    if isinstance(value, dict):
        return _mend_object(value, node, defs, where, notes)
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [_mend(item, node["items"], defs, f"{where}[{i}]", notes) for i, item in enumerate(value)]
    if isinstance(value, str) and "enum" in node:
        return _mend_enum(value, node["enum"], where, notes)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _clamp(value, node, where, notes)
    return value


def _mend_object(
    value: dict[str, Any], node: dict[str, Any], defs: dict[str, Any], where: str, notes: list[str]
) -> dict[str, Any]:
    properties = node.get("properties")
    extra = node.get("additionalProperties")
    mended = {}
    for key, item in value.items():
        path = f"{where}.{key}" if where else str(key)
        if isinstance(properties, dict) and key in properties:
            mended[key] = _mend(item, properties[key], defs, path, notes)
        elif isinstance(extra, dict):
            mended[key] = _mend(item, extra, defs, path, notes)
        elif isinstance(properties, dict) and extra is not True:
            notes.append(f"{path}: a key the schema does not know, dropped")
        else:
            mended[key] = item
    return mended


def _mend_enum(value: str, allowed: list[Any], where: str, notes: list[str]) -> Any:
    if value in allowed:
        return value
    wanted = value.strip().casefold()
    matches = [option for option in allowed if isinstance(option, str) and option.casefold() == wanted]
    if len(matches) != 1:
        return value
    notes.append(f"{where}: {value!r} read as {matches[0]!r}")
    return matches[0]


def _clamp(value: float, node: dict[str, Any], where: str, notes: list[str]) -> float:
    low, high = node.get("minimum"), node.get("maximum")
    bounded = value
    if isinstance(low, int | float) and bounded < low:
        bounded = low
    if isinstance(high, int | float) and bounded > high:
        bounded = high
    if bounded != value:
        notes.append(f"{where}: {value!r} outside [{low}, {high}], clamped to {bounded!r}")
    return bounded


def _kind_fits(value: Any, node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind is None:
        return "enum" in node or "properties" in node or not node
    kinds = {
        "object": dict,
        "array": list,
        "string": str,
        "integer": int,
        "number": int | float,
        "boolean": bool,
        "null": type(None),
    }
    expected = kinds.get(kind)
    if expected is None or (isinstance(value, bool) and kind in ("integer", "number")):
        return False
    return isinstance(value, expected)
