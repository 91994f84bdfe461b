"""`akira loop start|resume|stop|status|state|progress|logs`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from akira_cli.cli.common import ConfigOption, RootOption, TaskIdOption, TaskRootOption, exits
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.api.models import Answer


app = typer.Typer(help="Run and control autonomous loops.", no_args_is_help=True)
AgentKind = Literal["auto", "script", "command", "llm", "claude", "codex", "gemini", "aider"]
SandboxFlag = Annotated[
    bool | None,
    typer.Option(
        "--sandbox/--no-sandbox",
        metavar="",
        help="Run every step's processes in the sandbox (refuse without one), or not (sandbox.mode).",
    ),
]
NoWait = Annotated[
    bool,
    typer.Option(
        "--no-wait",
        metavar="",
        help="When paused, exit 3 instead of waiting to be resumed (usage limits are waited out).",
    ),
]


@app.command("start")
@exits
def start(
    task: Annotated[
        Path,
        typer.Option(
            "--task",
            readable=False,
            help="The tasks.md to work through, relative to the current folder or to the workspace.",
        ),
    ],
    config: ConfigOption = None,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", min=1, help="Attempts allowed over the whole task.")
    ] = None,
    failure_threshold: Annotated[
        int | None,
        typer.Option(
            "--failure-threshold",
            min=1,
            help="Failed attempts in a row before it asks a person (needs_action, exit 4).",
        ),
    ] = None,
    agent: Annotated[
        AgentKind | None,
        typer.Option(
            "--agent",
            help="Who works the steps (default: agent.kind in config, else auto).",
        ),
    ] = None,
    include_optional: Annotated[
        bool, typer.Option("--include-optional", metavar="", help="Also work the optional ('[ ]*') steps.")
    ] = False,
    detach: Annotated[bool, typer.Option("--detach", metavar="", help="Run in the background.")] = False,
    no_wait: NoWait = False,
    no_git: Annotated[
        bool,
        typer.Option(
            "--no-git",
            metavar="",
            help="No task branch and no commits, even in a git repository (git.enabled: false).",
        ),
    ] = False,
    parallel: Annotated[
        int | None,
        typer.Option(
            "--parallel",
            min=1,
            max=64,
            help="How many [P] steps of a wave run at once, each in a git worktree (needs git).",
        ),
    ] = None,
    root: TaskRootOption = None,
    sandbox: SandboxFlag = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            metavar="",
            help="After the pull request, fix its failing checks and answer its reviews (follow:).",
        ),
    ] = False,
) -> int:
    """Start a loop on a task file."""
    from akira_cli import api

    run = api.start(
        root,
        task,
        config=config,
        max_iterations=max_iterations,
        failure_threshold=failure_threshold,
        agent=agent,
        include_optional=include_optional,
        detach=detach,
        no_wait=no_wait,
        no_git=no_git,
        parallel=parallel,
        sandbox=sandbox,
        follow=follow,
        show=True,
        say=note,
    )
    return said(run, lambda: Workspace.resolve(root, task))


@app.command("resume")
@exits
def resume(
    task_id: TaskIdOption,
    max_iterations: Annotated[
        int | None, typer.Option("--max-iterations", min=1, help="New limit of attempts for the task.")
    ] = None,
    reset_failures: Annotated[
        bool, typer.Option("--reset-failures", metavar="", help="Set the failures-in-a-row count back to 0.")
    ] = False,
    guidance: Annotated[
        str | None, typer.Option("--guidance", help="Advice for the next attempt of the step that failed.")
    ] = None,
    accept_exam: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-exam",
            metavar="STEP",
            help=(
                "Let step STEP change its exam (its tests, their configuration, CI): it completes "
                "as changed-exam, recorded as yours."
            ),
        ),
    ] = None,
    no_wait: NoWait = False,
    detach: Annotated[bool, typer.Option("--detach", metavar="", help="Run in the background.")] = False,
    config: ConfigOption = None,
    root: RootOption = None,
    sandbox: SandboxFlag = None,
) -> int:
    """Resume a paused, interrupted or escalated loop."""
    from akira_cli import api

    run = api.resume(
        root,
        task_id,
        max_iterations=max_iterations,
        reset_failures=reset_failures,
        guidance=guidance,
        accept_exam=accept_exam,
        no_wait=no_wait,
        detach=detach,
        config=config,
        sandbox=sandbox,
        show=True,
        say=note,
    )
    return said(run, lambda: Workspace.resolve(root))


def note(line: str) -> None:
    """One of akira's lines on stderr."""
    typer.echo(f"akira: {line}", err=True)


def said(run: Answer, workspace: Callable[[], Workspace]) -> int:
    """What a start or a resume ended with, as the CLI says it; the exit code. A detached run's
    task id goes alone on stdout, for a script to take."""
    from akira_cli.api.models import Finished, Started

    if isinstance(run, Started):
        typer.echo(run.task_id)
        follow = command_line(workspace(), "loop", "logs", "--task-id", run.task_id, "--follow")
        note(f"{run.task_id} runs in the background as process {run.pid}; follow it with {in_quotes(follow)}")
        return 0
    note(run.line())
    return run.exit_code if isinstance(run, Finished) else 0
