"""The MCP tools: one per verb of the run API, on one workspace.

Each tool answers with the API's model as structured content and its one line as text; a
refusal is a tool error (`isError`) whose text is the line the CLI prints. A task path outside
the workspace is refused. Starts and resumes detach: a client polls `loop_status`. The tools are
plain functions, which the SDK runs on worker threads, so a slow call never blocks the server.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from akira_cli import api
from akira_cli.api.models import Answer
from akira_cli.errors import AkiraError
from akira_cli.fileio import describe_os_error
from akira_cli.redaction import redact
from akira_cli.workspace import Workspace

AgentKind = Literal["auto", "script", "command", "llm", "claude", "codex", "gemini", "aider"]
INSTRUCTIONS = """\
akira works through a spec's task list (tasks.md) unattended: each step by an agent, checked by
real checks, retried with reflection, one commit per verified step on a task branch. Start a run
with start_loop (it returns at once), then poll loop_status or loop_progress until its status is
completed, needs_action or paused; read_report says why. stop_loop pauses it, resume_loop (with
guidance) continues it, undo_step reverts a step's commit and every later one."""


def answer(call: Callable[[], Answer]) -> CallToolResult:
    """The API's answer as a tool result, or its refusal as a tool error with the CLI's line."""
    try:
        found = call()
    except AkiraError as exc:
        return refused(f"akira: error: {redact(str(exc))}")
    except OSError as exc:
        return refused(f"akira: error: {redact(describe_os_error(exc))}")
    return CallToolResult(
        content=[TextContent(type="text", text=found.line())], structured_content=found.data()
    )


def refused(line: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=line)], is_error=True)


def note(line: str) -> None:
    """A run's notes (warnings) go to the server's log, never to stdout (the stdio protocol)."""
    print(f"akira: {line}", file=sys.stderr, flush=True)


def server(workspace: Workspace) -> MCPServer:
    from importlib.metadata import version

    mcp: MCPServer = MCPServer(
        "akira", instructions=INSTRUCTIONS, version=version("akira-cli"), log_level="WARNING"
    )
    root = workspace.root

    def inside(task: str) -> Path:
        return workspace.require_inside((root / task).resolve())

    @mcp.tool()
    def list_tasks() -> CallToolResult:
        """Every task file in the workspace (Specs/, .kiro/specs/, specs/, openspec/changes/), its
        steps done and total, and its latest run if any."""
        return answer(lambda: api.tasks(root))

    @mcp.tool()
    def start_loop(
        task: str, agent: AgentKind | None = None, parallel: int | None = None, include_optional: bool = False
    ) -> CallToolResult:
        """Start a run on a task file (a path in the workspace, such as Specs/auth/tasks.md). It
        runs in the background: the answer comes at once, with the task id to poll."""
        return answer(
            lambda: api.start(
                root,
                inside(task),
                agent=agent,
                parallel=parallel,
                include_optional=include_optional,
                detach=True,
                say=note,
            )
        )

    @mcp.tool()
    def loop_status(task_id: str | None = None) -> CallToolResult:
        """A run's status (task id, task file or feature name), or every run's without one."""
        return answer(lambda: api.status(root, task_id))

    @mcp.tool()
    def loop_progress(task_id: str) -> CallToolResult:
        """A run's steps, the spec's acceptance criteria with their evidence, and those not covered."""
        return answer(lambda: api.progress(root, task_id))

    @mcp.tool()
    def loop_logs(task_id: str, tail: int = 50) -> CallToolResult:
        """The last `tail` events of a run's history, oldest first."""
        return answer(lambda: api.logs(root, task_id, tail))

    @mcp.tool()
    def read_report(task_id: str) -> CallToolResult:
        """The report that says most about a run now: its completion report, the escalation or
        intervention request that waits for a person, or its progress report."""
        return answer(lambda: api.report(root, task_id))

    @mcp.tool()
    def stop_loop(task_id: str) -> CallToolResult:
        """Pause a run at its next safe boundary (the running command finishes first)."""
        return answer(lambda: api.stop(root, task_id))

    @mcp.tool()
    def cancel_loop(task_id: str) -> CallToolResult:
        """End a run for good (it must not be running): status cancelled, its state archived."""
        return answer(lambda: api.cancel(root, task_id))

    @mcp.tool()
    def resume_loop(task_id: str, guidance: str | None = None) -> CallToolResult:
        """Resume a paused, interrupted or escalated run in the background; `guidance` goes into
        the next attempt of the step that failed."""
        return answer(lambda: api.resume(root, task_id, guidance=guidance, detach=True, say=note))

    @mcp.tool()
    def undo_step(task_id: str, step: str) -> CallToolResult:
        """Revert a git-native run's commit for `step` and every later step's (one revert commit
        each); the run is left paused, to do them again on resume."""
        return answer(lambda: api.undo(root, task_id, step))

    return mcp
