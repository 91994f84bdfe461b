"""The agent CLI versions akira's presets were tested against: the real CLIs,
as they ship, are the reference. The suite installs exactly these (`tests/realcli/`), and
`akira doctor` warns when the CLI on PATH is outside the tested range. One place to move a pin."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pin:
    version: str
    """The exact version the suite runs."""
    installer: str
    """`npm` or `pip`."""
    package: str
    """The package that ships the CLI."""
    oldest: str
    """The oldest version the preset's flags and output reading hold for."""


PINS: dict[str, Pin] = {
    "claude": Pin("2.1.197", "npm", "@anthropic-ai/claude-code", "2.0.0"),
    "codex": Pin("0.169.0", "npm", "@openai/codex", "0.169.0"),
    "gemini": Pin("0.61.0", "npm", "@google/gemini-cli", "0.61.0"),
    "aider": Pin("0.86.2", "pip", "aider-chat", "0.86.0"),
}
