"""The `llm` agent's workspace tools, exposed as OpenAI function tools.

Every path is confined to the workspace root by `confine.Confined` (opened component by component
with no-follow semantics, so there is no window between a check and the use), and writes to the
control plane are refused (`control_plane.ControlPlane`). Such refusals, unknown
tool names and malformed arguments are the model's mistakes, so they go back to the model as tool
errors (`ToolResult(error=True)`) instead of being raised. Every call is logged as a `tool_call`
event, and every output is cut to `max_output_chars`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from akira_cli.agents.confine import Confined, ConfinementError
from akira_cli.control_plane import ControlPlane
from akira_cli.events import EventBus, EventType
from akira_cli.redaction import redact
from akira_cli.runner import CommandRunner

T = TypeVar("T")
TOOL_NAMES = ("read_file", "write_file", "list_files", "run_command", "finish")
ARGUMENTS_IN_EVENT = 200
"""Characters of the raw arguments kept in a `tool_call` event (file contents can be large)."""
MAX_LISTED = 2000


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "A path relative to the workspace root."}
SPECS: dict[str, dict[str, Any]] = {
    "read_file": _function("read_file", "Read a text file of the workspace.", {"path": _PATH}, ["path"]),
    "write_file": _function(
        "write_file",
        "Create or overwrite a file of the workspace with the whole new content.",
        {"path": _PATH, "content": {"type": "string", "description": "The complete file content."}},
        ["path", "content"],
    ),
    "list_files": _function(
        "list_files",
        "List the files under a folder of the workspace, recursively ('.' for the root).",
        {"path": _PATH},
        ["path"],
    ),
    "run_command": _function(
        "run_command",
        "Run a shell command (bash -c) in the workspace root; returns its exit code and output.",
        {
            "command": {"type": "string", "description": "The shell command."},
            "timeout": {"type": "number", "description": "Seconds before it is killed (capped by the step)."},
        },
        ["command"],
    ),
    "finish": _function(
        "finish",
        "Call once the current step is done. Start the summary with 'BLOCKED:' if it cannot be "
        "done, or 'PARTIALLY_CLEAR:' if only part of it could be done.",
        {"summary": {"type": "string", "description": "What was done and what the next step needs."}},
        ["summary"],
    ),
}


@dataclass(frozen=True)
class ToolResult:
    output: str
    error: bool = False
    finished: bool = False
    """True for `finish`: the step is over and `output` is the model's summary."""


class ToolError(Exception):
    """A mistake of the model's; its message is what the model reads."""


def clip(text: str, limit: int, *, keep: str = "head") -> str:
    """`text` cut to at most `limit` characters, keeping its head (or tail) and saying so."""
    if len(text) <= limit:
        return text
    marker = f"[… truncated: {len(text)} characters in all]"
    room = limit - len(marker) - 1
    if room <= 0:
        return text[:limit] if keep == "head" else text[-limit:]
    return f"{text[:room]}\n{marker}" if keep == "head" else f"{marker}\n{text[-room:]}"


class Toolbox:
    """The tools of one agent run, rooted at `root` (the agent's workdir)."""

    def __init__(
        self,
        root: Path,
        runner: CommandRunner,
        *,
        allow_run_command: bool,
        max_output_chars: int,
        bus: EventBus,
        step_id: str,
        command_timeout: float = 600.0,
        control: ControlPlane | None = None,
    ) -> None:
        self.root = root.resolve()
        self.files = Confined(self.root)
        self.control = control or ControlPlane(self.root)
        self.runner = runner
        self.allow_run_command = allow_run_command
        self.max_output_chars = max_output_chars
        self.bus = bus
        self.step_id = step_id
        self.command_timeout = command_timeout
        """The step's timeout: no `run_command` may ask for more."""
        self._command_lock = threading.Lock()  # plan steps run in parallel; the runner runs one command
        self._handlers: dict[str, Callable[[dict[str, Any]], ToolResult]] = {
            "read_file": self._read_file,
            "write_file": self._write_file,
            "list_files": self._list_files,
            "run_command": self._run_command,
            "finish": self._finish,
        }

    def names(self) -> list[str]:
        return [name for name in TOOL_NAMES if name != "run_command" or self.allow_run_command]

    def specs(self) -> list[dict[str, Any]]:
        return [SPECS[name] for name in self.names()]

    def call(self, name: str, arguments_json: str) -> ToolResult:
        """Runs one tool call; the model's mistakes come back as an error result, never raised."""
        try:
            if name not in self.names():
                available = ", ".join(self.names())
                disabled = " (run_command is switched off in this workspace)" if name == "run_command" else ""
                raise ToolError(f"unknown tool '{name}'{disabled}; use one of: {available}")
            result = self._handlers[name](_arguments(arguments_json))
        except ToolError as exc:
            result = ToolResult(clip(f"error: {exc}", self.max_output_chars), error=True)
        masked = redact(result.output)  # it goes to the model's provider, like a prompt
        if masked != result.output:
            result = ToolResult(masked, result.error, result.finished)
        self.bus.emit(
            EventType.TOOL_CALL,
            self.step_id,
            name=name,
            arguments=clip(arguments_json, ARGUMENTS_IN_EVENT),
            error=result.error,
            **({"message": result.output.splitlines()[0][:300]} if result.error and result.output else {}),
        )
        return result

    @property
    def interrupted(self) -> bool:
        """A forced stop killed the runner's command: no more tool calls should follow."""
        return self.runner.killed

    # -- the tools ------------------------------------------------------------------------------

    def _read_file(self, args: dict[str, Any]) -> ToolResult:
        _, data = self._confined(lambda: self.files.read(_text(args, "path")))
        return ToolResult(clip(data.decode("utf-8", "replace"), self.max_output_chars))

    def _write_file(self, args: dict[str, Any]) -> ToolResult:
        raw = _text(args, "path")
        content = _text(args, "content", allow_empty=True)
        relative = self._confined(lambda: self.files.write(raw, content.encode(), refuse=self._refusal))
        return ToolResult(f"wrote {len(content)} characters to {relative}")

    def _refusal(self, relative: str, existing: os.stat_result | None) -> str | None:
        return self.control.refusal(self.root / relative, existing)

    def _list_files(self, args: dict[str, Any]) -> ToolResult:
        raw = _text(args, "path", allow_empty=True) or "."
        entries = self._confined(lambda: list(self.files.listing(raw, MAX_LISTED + 1)))
        if len(entries) > MAX_LISTED:
            entries = [*entries[:MAX_LISTED], f"[… stopped after {MAX_LISTED} entries]"]
        return ToolResult(clip("\n".join(entries) or "(empty folder)", self.max_output_chars))

    def _confined(self, operation: Callable[[], T]) -> T:
        """Runs a file operation; a refused path or an OS error goes back to the model."""
        try:
            return operation()
        except ConfinementError as exc:
            raise ToolError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise ToolError(f"{getattr(exc, 'strerror', None) or exc}") from None

    def _run_command(self, args: dict[str, Any]) -> ToolResult:
        command = _text(args, "command")
        asked = args.get("timeout")
        if asked is not None and (isinstance(asked, bool) or not isinstance(asked, int | float)):
            raise ToolError("'timeout' must be a number of seconds")
        timeout = min(float(asked), self.command_timeout) if asked and asked > 0 else self.command_timeout
        with self._command_lock:
            result = self.runner.run(command, timeout)
        status = "exit code 0" if result.ok else result.describe()
        output = clip(result.output, max(0, self.max_output_chars - len(status) - 1), keep="tail")
        return ToolResult(f"{status}\n{output}".rstrip(), error=not result.ok)

    def _finish(self, args: dict[str, Any]) -> ToolResult:
        summary = _text(args, "summary", allow_empty=True).strip() or "(no summary)"
        return ToolResult(summary, finished=True)


def _arguments(arguments_json: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments_json or "{}")
    except ValueError as exc:
        raise ToolError(f"the arguments are not valid JSON ({exc}); send a JSON object") from None
    if not isinstance(value, dict):
        raise ToolError('the arguments must be a JSON object, e.g. {"path": "README.md"}')
    return value


def _text(args: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = args.get(key, "" if allow_empty else None)
    if not isinstance(value, str):
        raise ToolError(f"'{key}' is required and must be a string")
    if not allow_empty and not value.strip():
        raise ToolError(f"'{key}' must not be empty")
    return value
