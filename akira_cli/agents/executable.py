"""Which agent CLI a run starts, and whether its executable is there.

A run whose agent CLI is missing is refused before anything starts (no branch, no state), the
way the "no agent configured" refusal is; `akira doctor` reports the same finding.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import AkiraError

if TYPE_CHECKING:
    from akira_cli.agents.presets.base import Preset
    from akira_cli.config import Config
    from akira_cli.sections import AgentSettings
    from akira_cli.tasks.model import Step

ASSIGNMENT = "="
SHELL_WORDS = frozenset(
    {"cd", "export", "source", ".", "eval", "set", "unset", "if", "for", "while", "until", "case",
     "{", "(", "!", "[", "[[", "test", "true", "false", ":", "exec", "command", "builtin", "time"}
)  # fmt: skip
"""A line starting so runs a shell program, not one executable that could be looked up."""
SHELL_SYNTAX = ("$", "`", ";", "&", "|", "<", ">", "(", ")")


@dataclass(frozen=True)
class AgentCommand:
    """The agent CLI one run starts: the command line of a fresh attempt, and its executable."""

    line: str
    executable: str
    preset: Preset | None
    """The preset whose flags and output apply (also inferred from agent.command's executable)."""
    settings: AgentSettings
    from_config: bool
    """Whether the line comes from agent.command (else from the preset's default)."""
    words: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.preset.name if self.preset is not None else "command"


def agent_command(kind: str, config: Config) -> AgentCommand | None:
    """The agent CLI of agent kind `kind` (`command` or a preset's name); None for the agents that
    start no CLI (`script`, `llm`, and `auto` when nothing names one)."""
    from akira_cli.agents.presets.base import PRESETS

    settings = config.agent
    if kind in PRESETS:
        settings = settings.model_copy(update={"preset": kind})
    elif kind == "auto" and (settings.command or settings.preset) and not config.llm.base_url:
        kind = "command"
    if kind != "command" and kind not in PRESETS:
        return None
    preset = PRESETS[settings.preset] if settings.preset else None
    if preset is not None:
        line = preset.command(settings, None)
    elif settings.command:
        line = " ".join([settings.command, *settings.extra_args])
    else:
        return None
    words = split_line(line)
    executable = first_program(words)
    if preset is None:  # `agent.command: claude -p` reads as the claude preset's CLI
        preset = next((p for p in PRESETS.values() if p.executable == Path(executable).name), None)
    return AgentCommand(line, executable, preset, settings, bool(settings.command), words)


def split_line(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:  # unbalanced quotes: bash will say so; the first word is still the program
        return line.split()


def first_program(words: list[str]) -> str:
    """The program a shell line starts: past `VAR=value` assignments and an `env` prefix; "" when
    the line is shell code whose program cannot be told without running it (`cd x && claude`)."""
    rest = list(words)
    while rest and ASSIGNMENT in rest[0] and not rest[0].startswith(("-", "/", ".")):
        rest.pop(0)
    if rest and rest[0] == "env":
        rest.pop(0)
        while rest and (ASSIGNMENT in rest[0] or rest[0].startswith("-")):
            rest.pop(0)
    program = rest[0] if rest else ""
    if program in SHELL_WORDS or any(mark in program for mark in SHELL_SYNTAX):
        return ""
    return program


def locate(executable: str, workdir: Path) -> str | None:
    """Where the shell in `workdir` would find `executable`: a path (relative to `workdir`) or a
    name looked up on PATH."""
    if not executable:
        return None
    if "/" in executable:
        path = workdir / Path(executable).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(executable)


def missing_message(command: AgentCommand) -> str:
    """One line: the executable, PATH, and where the command line comes from."""
    from akira_cli.agents.presets.versions import PINS

    path = os.environ.get("PATH", "")
    if command.from_config:
        source = f"agent.command is {command.settings.command!r}"
    else:
        source = f"agent.command is not set, so the {command.name} preset runs {command.line!r}"
    pin = PINS.get(command.preset.name) if command.preset is not None else None
    install = f"install it ({install_command(pin.installer, pin.package, pin.version)}) or " if pin else ""
    return (
        f"agent executable {command.executable!r} not found on PATH ({path}); {source}; "
        f"{install}set agent.command to the executable's full path"
    )


def install_command(installer: str, package: str, version: str) -> str:
    if installer == "npm":
        return f"npm install -g {shlex.quote(f'{package}@{version}')}"
    return f"pip install {shlex.quote(f'{package}=={version}')}"


def require_agent_executable(kind: str, steps: list[Step], config: Config, workdir: Path) -> None:
    """Refuses a run whose agent CLI is not there, before anything starts. Only the steps left to
    run count: `auto` starts no CLI for a step with `Run:` lines."""
    from akira_cli.agents.choice import choose_kind

    for step in steps:
        try:
            chosen = choose_kind(kind, step, config)
        except AkiraError:
            continue  # no agent configured for the step: the run's own refusal says so
        command = agent_command(chosen, config)
        if command is not None and command.executable and locate(command.executable, workdir) is None:
            raise AkiraError(missing_message(command))
        if command is not None:
            return  # one CLI per run: found once is found
