"""One tool call: the API's verb on a worker thread (a slow call never blocks the server), its
notes sent to the client as MCP log messages, progress while it waits, and its answer as the
result a client expects (the structured content, and the same JSON as the text block), or its
refusal as a tool error of one line.

A client that cancels its call abandons the thread, and the verb is told (`go_on`), so a start
not yet under way starts nothing."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent

from akira_cli.api.models import Answer
from akira_cli.errors import AkiraError
from akira_cli.fileio import describe_os_error
from akira_cli.redaction import redact

Say = Callable[[str], None]
TOOLS = {
    "start": "start_loop", "status": "loop_status", "state": "loop_status", "progress": "loop_progress",
    "logs": "loop_logs", "stop": "stop_loop", "cancel": "cancel_loop", "resume": "resume_loop",
    "undo": "undo_step",
}  # fmt: skip
"""The tool that does what an `akira loop` command a refusal names does."""
ARGUMENTS = {"--task-id": "task_id", "--task": "task", "--step": "step", "--guidance": "guidance"}
COMMAND = re.compile(r"(?:run:? )?'?akira loop (\w+)((?: --?[\w-]+(?: [^\s'-][^\s';,]*)?)*)'?")
BEAT = 0.5
"""Seconds between progress notifications while a call waits."""


def result(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def refused(line: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def refusal(line: str) -> CallToolResult:
    return refused(f"akira: error: {redact(line)}")


def tool_call(match: re.Match[str]) -> str:
    """`run 'akira loop stop --task-id T --root R'` as `call stop_loop with task_id T`."""
    tool = TOOLS.get(match[1])
    if tool is None:
        return match[0]
    words, given = match[2].split(), []
    for at, word in enumerate(words):
        if word in ARGUMENTS and at + 1 < len(words) and not words[at + 1].startswith("-"):
            given.append(f"{ARGUMENTS[word]} {words[at + 1]}")
    return f"call {tool}" + (f" with {', '.join(given)}" if given else "")


def answer(verb: Callable[[], Answer], client: Callable[[str], str] = str) -> CallToolResult:
    """The API's answer as a tool result, or its refusal as a tool error of one line; `client`
    writes a line for the client (its paths, its tools), in a refusal and in an answer's
    `message` and `warnings`."""
    try:
        found = verb()
    except AkiraError as exc:
        return refusal(client(str(exc)))
    except OSError as exc:
        return refusal(client(describe_os_error(exc)))
    data = found.data()
    if isinstance(data.get("message"), str):
        data["message"] = client(data["message"])
    if isinstance(data.get("warnings"), list):
        data["warnings"] = [client(line) for line in data["warnings"]]
    return result(data)


def note(line: str) -> None:
    """A run's notes also go to the server's log, never to stdout (the stdio protocol)."""
    print(f"akira: {line}", file=sys.stderr, flush=True)


@dataclass
class Call:
    """One call's verb and what its refusals say instead of the server's own spelling of a path
    (`shown`: the absolute path as the client gave it)."""

    ctx: Context[Any, Any]
    root: Path | None = None
    """The workspace: a path under it is shown from its top."""
    shown: dict[str, str] = field(default_factory=dict)
    cancelled: threading.Event = field(default_factory=threading.Event)
    notes: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.notes.append(line)
        note(line)

    def go_on(self) -> bool:
        return not self.cancelled.is_set()

    async def run(self, verb: Callable[[], Answer], waiting: str | None = None) -> CallToolResult:
        """`verb`'s answer; `waiting`: the progress message sent while it runs."""
        outcome: list[CallToolResult | BaseException] = []

        def work() -> None:
            try:
                outcome.append(answer(verb, self.as_given))
            except BaseException as exc:  # handed back to the event loop, never lost on the thread
                outcome.append(exc)

        try:
            async with anyio.create_task_group() as group:
                if waiting is not None:
                    group.start_soon(self.beat, waiting)
                await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        for line in self.notes:
            await self.log(line)
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def as_given(self, line: str) -> str:
        """The refusal for the client: paths as it gave them (else from the workspace's top),
        and the tool to call where the CLI's line names a command."""
        for server, client in self.shown.items():
            line = line.replace(server, client)
        if self.root is not None:
            line = line.replace(f"{self.root}/", "")
        return COMMAND.sub(tool_call, line)

    async def beat(self, message: str) -> None:
        count = 0
        while True:
            await anyio.sleep(BEAT)
            count += 1
            await self.ctx.report_progress(count, None, message)

    async def log(self, line: str) -> None:
        level: Literal["warning", "info"] = "warning" if line.startswith("warning: ") else "info"
        try:
            await self.ctx.log(level, redact(line.removeprefix("warning: ")), logger_name="akira")
        except Exception as exc:  # a client that cannot take it still has the result
            note(f"could not send a log message to the client: {exc}")
