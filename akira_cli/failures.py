"""Telling transient failures from strategic ones, and error signatures."""

from __future__ import annotations

import hashlib
import re

from akira_cli.transient import is_transient

_MASKS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<ts>",
    ),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
    ),
    (re.compile(r"0x[0-9a-f]+", re.I), "<addr>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*/)+[\w.-]+"), "<path>"),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
]


# The most telling line of an error, by preference: a raised exception, an `error:`, a failure.
KEY_LINES = [
    re.compile(r"^\w*(?:Error|Exception)\b"),
    re.compile(r"\berror\b", re.I),
    re.compile(r"failed|not found|denied|timed out", re.I),
]


def key_line(error: str, limit: int = 200) -> str:
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    for pattern in KEY_LINES:
        found = [line for line in lines if pattern.search(line)]
        if found:
            return found[-1][:limit]
    return lines[0][:limit] if lines else "unknown error"


def is_transient_output(output: str, exit_code: int | None, transient_codes: list[int]) -> bool:
    if exit_code is not None and exit_code in transient_codes:
        return True
    return is_transient(output[-4000:])


def normalise(error: str) -> str:
    """Masks paths, numbers, addresses and timestamps so the same failure looks the same."""
    text = error.strip()
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return text.strip()[:500]


def signature(error: str) -> str:
    normal = normalise(error)
    return hashlib.sha256(normal.encode()).hexdigest()[:12] if normal else ""
