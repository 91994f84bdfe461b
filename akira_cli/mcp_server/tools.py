"""The MCP tools: one per verb of the run API, on one workspace; and each run's report and logs
as resources (`akira://task/<id>/report`, `akira://task/<id>/logs`).

Each tool's output schema is the API's model, and its answer that model as structured content
and as JSON text; a refusal is a tool error (`isError`) of one line. A task path outside the
workspace, a task file a step wrote, and a start beyond `mcp.max_running` runs are refused.
Starts and resumes detach: a client polls `loop_status`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import ConfigDict, Field, RootModel

from akira_cli import api
from akira_cli.api.models import (
    Dashboard,
    Logs,
    LoopSummary,
    Note,
    Progress,
    Report,
    Resumed,
    Started,
    TaskList,
    Undone,
)
from akira_cli.api.running import Running
from akira_cli.errors import AkiraError
from akira_cli.mcp_server.calls import Call
from akira_cli.mcp_server.server import AkiraServer
from akira_cli.redaction import redact
from akira_cli.resume_requests import MAX_GUIDANCE
from akira_cli.workspace import Workspace

AgentKind = Literal["auto", "script", "command", "llm", "claude", "codex", "gemini", "aider"]
TaskId = Annotated[str, Field(min_length=1, description="A task id, task file or feature name.")]
INSTRUCTIONS = """\
akira works through a spec's task list (tasks.md) unattended: each step by an agent, checked by
real checks, retried with reflection, one commit per verified step on a task branch. Start a run
with start_loop (it returns at once), then poll loop_status or loop_progress until its status is
completed, needs_action or paused; read_report says why. stop_loop pauses it, resume_loop (with
guidance) continues it, undo_step reverts a step's commit and every later one."""
READS = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DESTROYS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


class StatusAnswer(RootModel[LoopSummary | Dashboard]):
    """loop_status's output schema: one run's summary, or every run's."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


class ResumeAnswer(RootModel[Started | Resumed]):
    """resume_loop's output schema: a run started again, or a waiting process told to go on."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


def server(workspace: Workspace) -> AkiraServer:
    from importlib.metadata import version

    from akira_cli.config import load_config

    mcp = AkiraServer(
        name="akira", instructions=INSTRUCTIONS, version=version("akira-cli"), log_level="WARNING"
    )
    root = workspace.root
    running = Running(root, load_config(root).mcp.max_running, "stop_loop one")

    def inside(call: Call, task: str) -> Path:
        path = (root / task).resolve()
        call.shown[str(path)] = task
        return workspace.require_inside(path)

    @mcp.tool(annotations=READS)
    async def list_tasks(ctx: Context[Any, Any]) -> Annotated[CallToolResult, TaskList]:
        """Every task file in the workspace (Specs/, .kiro/specs/, specs/, openspec/changes/), its
        steps done and total, its latest run if any, and who wrote it (`origin`: a `step` one
        is not started)."""
        return await Call(ctx, root).run(lambda: api.tasks(root))

    @mcp.tool(annotations=WRITES)
    async def start_loop(
        ctx: Context[Any, Any],
        task: Annotated[
            str, Field(min_length=1, description="A task file in the workspace, such as Specs/auth/tasks.md.")
        ],
        agent: AgentKind | None = None,
        parallel: Annotated[int | None, Field(ge=1, le=64)] = None,
        include_optional: bool = False,
    ) -> Annotated[CallToolResult, Started]:
        """Start a run on a task file. It runs in the background: the answer comes once the run
        has started, with the task id to poll."""
        call = Call(ctx, root)

        def start() -> Started:
            path = inside(call, task)
            written_by_a_step(path, task)
            with running.lock:
                running.refuse_more()
                found = api.start(
                    root,
                    path,
                    agent=agent,
                    parallel=parallel,
                    include_optional=include_optional,
                    detach=True,
                    say=call.say,
                    go_on=call.go_on,
                )
                if not isinstance(found, Started):
                    raise AkiraError(found.line())  # every step ticked: no run to poll
                running.started(found)
            return found

        return await call.run(start, waiting=f"starting a run on {task}")

    def written_by_a_step(path: Path, task: str) -> None:
        """A task file a step wrote is refused: one its commit made, or (no commit says who
        wrote it) one outside the spec folders, where a step may write."""
        from akira_cli.api.origins import in_spec_folder, origins

        path = path / "tasks.md" if path.is_dir() else path  # a feature folder: its task file
        origin = origins(root, [path])[path]
        if origin == "step" or (origin == "uncommitted" and not in_spec_folder(root, path)):
            why = (
                "was written by an akira step, not by a person"
                if origin == "step"
                else "is neither in a spec folder nor in git, so a step may have written it"
            )
            raise AkiraError(f"{task} {why}; a person reads it and starts it from the command line")

    @mcp.tool(annotations=READS)
    async def loop_status(
        ctx: Context[Any, Any], task_id: TaskId | None = None
    ) -> Annotated[CallToolResult, StatusAnswer]:
        """A run's status (task id, task file or feature name), or every run's without one."""
        return await Call(ctx, root).run(lambda: api.status(root, task_id))

    @mcp.tool(annotations=READS)
    async def loop_progress(ctx: Context[Any, Any], task_id: TaskId) -> Annotated[CallToolResult, Progress]:
        """A run's steps, the spec's acceptance criteria with their evidence, and those not covered."""
        return await Call(ctx, root).run(lambda: api.progress(root, task_id))

    @mcp.tool(annotations=READS)
    async def loop_logs(
        ctx: Context[Any, Any], task_id: TaskId, tail: Annotated[int, Field(ge=1, le=10_000)] = 50
    ) -> Annotated[CallToolResult, Logs]:
        """The last `tail` events of a run's history, oldest first, and whether a process runs it."""
        return await Call(ctx, root).run(lambda: api.logs(root, task_id, tail))

    @mcp.tool(annotations=READS)
    async def read_report(ctx: Context[Any, Any], task_id: TaskId) -> Annotated[CallToolResult, Report]:
        """The report that says most about a run now: its completion report, the escalation or
        intervention request that waits for a person, or its progress report."""
        return await Call(ctx, root).run(lambda: api.report(root, task_id))

    @mcp.tool(annotations=WRITES)
    async def stop_loop(ctx: Context[Any, Any], task_id: TaskId) -> Annotated[CallToolResult, Note]:
        """Pause a run at its next safe boundary (the running command finishes first)."""
        return await Call(ctx, root).run(lambda: api.stop(root, task_id))

    @mcp.tool(annotations=DESTROYS)
    async def cancel_loop(ctx: Context[Any, Any], task_id: TaskId) -> Annotated[CallToolResult, Note]:
        """End a run for good (it must not be running): status cancelled, its state archived."""
        return await Call(ctx, root).run(lambda: api.cancel(root, task_id))

    @mcp.tool(annotations=WRITES)
    async def resume_loop(
        ctx: Context[Any, Any],
        task_id: TaskId,
        guidance: Annotated[str | None, Field(max_length=MAX_GUIDANCE)] = None,
    ) -> Annotated[CallToolResult, ResumeAnswer]:
        """Resume a paused, interrupted or escalated run in the background; `guidance` (at most
        16 KiB) goes into the next attempt of the step that failed."""
        call = Call(ctx, root)

        def resume() -> Started | Resumed:
            with running.lock:
                running.refuse_more()
                found = api.resume(root, task_id, guidance=guidance, detach=True, say=call.say)
                if not isinstance(found, Started | Resumed):
                    raise AkiraError(found.line())  # completed: nothing to resume
                running.started(found)
            return found

        return await call.run(resume, waiting=f"resuming {task_id}")

    @mcp.tool(annotations=DESTROYS)
    async def undo_step(
        ctx: Context[Any, Any], task_id: TaskId, step: Annotated[str, Field(min_length=1)]
    ) -> Annotated[CallToolResult, Undone]:
        """Revert a git-native run's commit for `step` and every later step's (one revert commit
        each); the run is left paused, to do them again on resume."""
        return await Call(ctx, root).run(lambda: api.undo(root, task_id, step))

    @mcp.resource("akira://task/{task_id}/report", mime_type="text/markdown")
    def task_report(task_id: str) -> str:
        """The report that says most about a run now (as read_report)."""
        try:
            return api.report(root, task_id).text
        except AkiraError as exc:
            raise ResourceError(f"akira: error: {redact(str(exc))}") from None

    @mcp.resource("akira://task/{task_id}/logs", mime_type="application/json")
    def task_logs(task_id: str) -> str:
        """A run's whole event history, oldest first (as loop_logs)."""
        try:
            return api.logs(root, task_id).model_dump_json()
        except AkiraError as exc:
            raise ResourceError(f"akira: error: {redact(str(exc))}") from None

    return mcp
