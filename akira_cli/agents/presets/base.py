"""What every preset shares: the report of one run, the `Preset` protocol and the registry by
name (the package imports the presets, which register here)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from akira_cli.agents.base import ProviderFault, UsageLimit
from akira_cli.usage import Usage

if TYPE_CHECKING:
    from akira_cli.sections import AgentSettings


@dataclass
class CliReport:
    """What a preset read from one run of its CLI."""

    answer: str = ""
    failed: bool = False
    error: str = ""
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None
    limit: UsageLimit | None = None
    fault: ProviderFault | None = None
    running_total: bool = False
    """`usage` is the conversation's total so far (codex's `exec resume`), not this run's."""
    refused: list[str] = field(default_factory=list)
    """Tools the CLI's permission mode refused in a run that otherwise answered (claude's
    `permission_denials`): a failed attempt for an agent, which had to write; a reviewer's
    answer still counts, since it was asked to read only."""


class Preset(Protocol):
    name: str
    executable: str
    split_stderr: bool
    """The CLI writes its answer to stdout and its noise to stderr: read them apart."""

    def command(self, settings: AgentSettings, session_id: str | None) -> str:
        """The shell command line; the prompt goes on stdin (or `{prompt_file}`)."""
        ...

    def read(self, output: str, exit_code: int | None, stderr: str = "") -> CliReport:
        """`output` is stdout (with stderr merged in unless `split_stderr`)."""
        ...


PRESETS: dict[str, Preset] = {}


ORDER = ("claude", "codex", "gemini", "aider")


def register_preset(preset: Preset) -> Preset:
    PRESETS[preset.name] = preset
    ordered = sorted(PRESETS.items(), key=lambda item: ORDER.index(item[0]) if item[0] in ORDER else 99)
    PRESETS.clear()
    PRESETS.update(ordered)
    return preset


def found_on_path() -> list[str]:
    """The agent CLIs of the presets that are installed here."""
    return [name for name, preset in PRESETS.items() if shutil.which(preset.executable)]
