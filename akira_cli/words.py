"""Words a person reads: a number with its noun in agreement."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`1 step`, `3 steps`, `0 steps`; `plural` where adding an s is wrong (`1 criterion`)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def clipped(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after a whole word and marked with `…`."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:  # a word's end not too far back; else one very long word is cut
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"
