"""Finding a CLI's JSON in its output, which may carry warnings and progress lines around it."""

from __future__ import annotations

import json
from typing import Any

from akira_cli.usage import Usage


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


def one_call(counts: dict[str, Any], prompt: str, completion: str, cached: str) -> Usage:
    """One model call's usage from a JSON object of token counts, under the CLI's own keys."""
    return Usage(
        prompt_tokens=number(counts.get(prompt)),
        completion_tokens=number(counts.get(completion)),
        cached_tokens=number(counts.get(cached)),
        calls=1,
    )


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
