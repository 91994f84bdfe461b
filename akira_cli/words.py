"""Words a person reads: a number with its noun in agreement."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`1 step`, `3 steps`, `0 steps`; `plural` where adding an s is wrong (`1 criterion`)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
