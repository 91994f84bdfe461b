"""The agent CLI: on PATH, its version within the tested range, and the flags the preset passes
accepted by its `--help`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.agents.executable import install_command, split_line
from akira_cli.agents.presets.versions import PINS, Pin
from akira_cli.doctor.base import DoctorContext, Finding, register_check
from akira_cli.workspace import work_folder

if TYPE_CHECKING:
    from akira_cli.agents.executable import AgentCommand

VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
LONG_FLAG_RE = re.compile(r"--[A-Za-z0-9][\w-]*")
SESSION = "SESSION_ID"
"""Stands for a session id in the `agent.session: continue` command line."""


def version_of(text: str) -> tuple[int, int, int] | None:
    match = VERSION_RE.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def shown(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def pin_install(pin: Pin) -> str:
    return install_command(pin.installer, pin.package, pin.version)


def own_executable(command: AgentCommand) -> bool:
    """Whether the line starts the preset's CLI itself, not a launcher (`npx …`, a wrapper
    script) whose `--version` and `--help` are its own."""
    return command.preset is not None and Path(command.executable).name == command.preset.executable


class AgentOnPath:
    name = "agent"

    def run(self, context: DoctorContext) -> list[Finding]:
        workdir = work_folder(context.root, context.config.agent.workdir)
        if context.config.agent.workdir and not workdir.is_dir():
            return [
                Finding(
                    "agent",
                    "fail",
                    f"agent.workdir {workdir} does not exist",
                    "create the folder, or fix agent.workdir in config/autonomous_loop.yaml",
                )
            ]
        command = context.agent
        if command is None:
            return [self.no_cli(context)]
        if not command.executable:
            return [
                Finding(
                    "agent",
                    "warn",
                    f"agent.command {command.line!r} is shell code: which program it starts is not checked",
                    "put the agent CLI first in agent.command (a wrapper script is fine)",
                )
            ]
        if context.executable is None:
            path = context.env.get("PATH", "")
            detail = f"{command.executable!r} is not on PATH ({path}); the run would start {command.line!r}"
            return [Finding("agent", "fail", detail, self.install_fix(command))]
        if (hides := sandbox_hides("the agent's program", command, context)) is not None:
            return [Finding.of_said("agent", hides)]
        return [Finding("agent", "ok", f"{command.name}: {context.executable} (runs: {command.line})")]

    def no_cli(self, context: DoctorContext) -> Finding:
        kind = context.kind
        if kind in ("script", "llm") or (kind == "auto" and context.config.llm.base_url):
            return Finding("agent", "ok", f"agent kind {kind}: no agent CLI is started")
        from akira_cli.agents.presets.base import PRESETS, found_on_path

        found = found_on_path()
        seen = f"found on PATH: {', '.join(found)}" if found else "none of them is on PATH"
        return Finding(
            "agent",
            "warn",
            f"no agent configured: only steps with 'Run:' lines can run ({seen})",
            f"set agent.preset ({', '.join(PRESETS)}) or pass --agent NAME, or set llm.base_url",
        )

    def install_fix(self, command: AgentCommand) -> str:
        pin = PINS.get(command.name)
        if pin is not None:
            return f"install it: {pin_install(pin)}; or set agent.command to the executable's full path"
        return "install it, or set agent.command to a program that is on PATH"


def sandbox_hides(label: str, command: AgentCommand, context: DoctorContext) -> str | None:
    """Why the sandbox would not start `command`'s program though it is found here (see
    `sandbox/sees.py`); None when it would, or a run is not sandboxed."""
    from akira_cli.sandbox.sees import hidden_program, would_sandbox

    settings = context.config.sandbox
    if not would_sandbox(settings):
        return None
    preset = command.preset.name if command.preset is not None else None
    trees = [context.workdir, context.root]
    return hidden_program(label, command.executable, settings, trees, preset, context.env)


class AgentVersion:
    name = "version"

    def run(self, context: DoctorContext) -> list[Finding]:
        command = context.agent
        if command is None or context.executable is None or command.name not in PINS:
            return []
        if not own_executable(command):
            return [not_checked("version", command)]
        pin = PINS[command.name]
        answer = context.tool([context.executable, "--version"])
        found = version_of(answer.out) or version_of(answer.err)
        tested = f"tested {pin.oldest} to {pin.version}"
        if answer.code != 0 or found is None:
            reason = answer.err.strip().splitlines()[-1:] or [f"exit {answer.code}"]
            return [
                Finding(
                    "version",
                    "warn",
                    f"'{command.executable} --version' told no version ({reason[0][:200]}); {tested}",
                    f"install the tested version: {pin_install(pin)}",
                )
            ]
        context.cli_version = found
        oldest, newest = version_of(pin.oldest), version_of(pin.version)
        assert oldest is not None and newest is not None
        if found < oldest:
            detail = f"{command.name} {shown(found)} is older than the tested range ({tested})"
        elif found > newest:
            detail = (
                f"{command.name} {shown(found)} is newer than the tested range ({tested}); its flags "
                "and output may have changed"
            )
        else:
            return [Finding("version", "ok", f"{command.name} {shown(found)} ({tested})")]
        return [Finding("version", "warn", detail, f"install the tested version: {pin_install(pin)}")]


class AgentFlags:
    name = "flags"

    def run(self, context: DoctorContext) -> list[Finding]:
        command = context.agent
        if command is None or context.executable is None or command.preset is None:
            return []
        if not own_executable(command):
            return [not_checked("flags", command)]
        findings = [self.check_line(context, command, words) for words in command_lines(command)]
        return [f for f in findings if f is not None]

    def check_line(self, context: DoctorContext, command: AgentCommand, words: list[str]) -> Finding | None:
        subcommand, used = read_line(command, words)
        help_line = shlex.join([command.executable, *subcommand, "--help"])
        if not used:
            return None
        answer = context.tool([context.executable or command.executable, *subcommand, "--help"])
        known = accepted_flags(answer.out) | accepted_flags(answer.err)
        if not known:
            return Finding(
                "flags",
                "warn",
                f"'{help_line}' listed no flags (exit {answer.code}); cannot tell whether "
                f"{', '.join(used)} are accepted",
                f"run '{help_line}' and compare with agent.command",
            )
        rejected = [flag for flag in used if flag not in known]
        if not rejected:
            return Finding("flags", "ok", f"'{help_line}' lists {', '.join(used)}")
        return Finding(
            "flags",
            "fail",
            f"'{help_line}' does not list {', '.join(rejected)}: the CLI refuses the command line "
            f"{shlex.join(words)!r}",
            flag_fix(command, rejected, context.cli_version),
        )


def command_lines(command: AgentCommand) -> list[list[str]]:
    """The words of each command line a run may start: a fresh attempt's, and with
    `agent.session: continue` a resumed one's."""
    lines = [command.words]
    settings = command.settings
    if command.preset is not None and settings.session == "continue":
        lines.append(split_line(command.preset.command(settings, SESSION)))
    return lines


def read_line(command: AgentCommand, words: list[str]) -> tuple[list[str], list[str]]:
    """A command line's subcommand words (`exec`, `exec resume`) and the long flags it passes."""
    start = words.index(command.executable) if command.executable in words else 0
    subcommand = []
    for word in words[start + 1 :]:
        if word.startswith("-"):
            break
        if word != SESSION:
            subcommand.append(word)
    used = [w.split("=", 1)[0] for w in words[start + 1 :] if LONG_FLAG_RE.fullmatch(w.split("=", 1)[0])]
    return subcommand, list(dict.fromkeys(used))


def tool_calls(context: DoctorContext) -> list[list[str]]:
    """The agent CLI's `--version` and `--help` runs the checks will ask for."""
    command, executable = context.agent, context.executable
    if command is None or executable is None or not own_executable(command):
        return []
    calls = [[executable, "--version"]] if command.name in PINS else []
    for words in command_lines(command):
        subcommand, used = read_line(command, words)
        if used:
            calls.append([executable, *subcommand, "--help"])
    return calls


def not_checked(check: str, command: AgentCommand) -> Finding:
    preset = command.preset.executable if command.preset is not None else command.name
    return Finding(check, "ok", f"not checked: agent.command starts {command.executable!r}, not {preset!r}")


def accepted_flags(help_text: str) -> set[str]:
    """The long flags a `--help` text defines: those at the start of an option's line (before the
    description, which is two spaces or more away), aliases included (`-c, --config <x>`,
    `--allowedTools, --allowed-tools <tools...>`, `--message-file FILE, -f FILE`)."""
    flags: set[str] = set()
    for line in help_text.splitlines():
        text = line.strip()
        if text.startswith("-"):
            head = re.split(r"\s{2,}", text, maxsplit=1)[0]
            flags.update(LONG_FLAG_RE.findall(head))
    return flags


def flag_fix(command: AgentCommand, rejected: list[str], version: tuple[int, int, int] | None) -> str:
    settings = command.settings
    extra = [flag for flag in rejected if any(arg.split("=", 1)[0] == flag for arg in settings.extra_args)]
    if extra:
        return f"remove {', '.join(extra)} from agent.extra_args"
    if command.from_config:
        return f"change agent.command: drop or replace {', '.join(rejected)}"
    line = f"set agent.command to the line without {', '.join(rejected)}"
    pin = PINS.get(command.name)
    if pin is None or version == version_of(pin.version):
        return line  # the preset's own flags do not fit the tested version: the preset is behind
    return f"install the tested version ({pin_install(pin)}); or {line}"


register_check(AgentOnPath())
register_check(AgentVersion())
register_check(AgentFlags())
