"""A reviewer's verdict, read from what it printed: approved, or changes with reasons.

It is a JSON object `{"verdict": "approve"|"changes", "reasons": ...}` (alone, or inside an
agent CLI's own JSON: claude's `result`, gemini's `response`, a codex `agent_message`), or a last
line `VERDICT: approve|changes`, whose reasons are the text before that line and what follows
the verdict word on it. Anything else is no verdict: never an approval.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from akira_cli.agents.presets.jsonout import json_objects

LINE = re.compile(r"^[\s*_`>#-]*verdict[*_`\s]*:[*_`\s]*(approve|changes)\b[*_`.:;,\s-]*(.*)$", re.I)
WRAPPERS = ("result", "response", "text", "message", "content")
"""Where an agent CLI's JSON keeps the model's answer."""


@dataclass
class Verdict:
    verdict: Literal["approve", "changes"]
    reasons: str


def read_verdict(text: str) -> Verdict | None:
    """The verdict in `text`, or None when it holds none."""
    return _read(text, 0)


def _from_object(data: dict[str, Any], depth: int) -> Verdict | None:
    word = data.get("verdict")
    if isinstance(word, str) and word.strip().lower() in ("approve", "changes"):
        return Verdict(word.strip().lower(), _reasons(data.get("reasons")))  # type: ignore[arg-type]
    if depth > 3:
        return None
    for key in WRAPPERS:
        inner = data.get(key)
        if isinstance(inner, str) and inner.strip():
            verdict = _read(inner, depth + 1)
            if verdict is not None:
                return verdict
        elif isinstance(inner, dict):
            verdict = _from_object(inner, depth + 1)
            if verdict is not None:
                return verdict
    item = data.get("item")
    if isinstance(item, dict):
        return _from_object(item, depth + 1)
    return None


def _read(text: str, depth: int) -> Verdict | None:
    for found in reversed(json_objects(text)):
        verdict = _from_object(found, depth)
        if verdict is not None:
            return verdict
    fenced = re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    for block in reversed(fenced):
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict):
            verdict = _from_object(value, depth)
            if verdict is not None:
                return verdict
    return _from_lines(text)


def _from_lines(text: str) -> Verdict | None:
    lines = text.rstrip().splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return None
    match = LINE.match(lines[-1].strip())
    if match is None:
        return None
    before = "\n".join(lines[:-1]).strip()
    after = match.group(2).strip().strip("*_`").strip()
    reasons = "\n".join(part for part in (before, after) if part)
    return Verdict(match.group(1).lower(), reasons)  # type: ignore[arg-type]


def _reasons(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(f"- {str(item).strip()}" for item in value if str(item).strip())
    return str(value).strip() if value is not None else ""
