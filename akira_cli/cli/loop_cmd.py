"""`akira loop start|resume|stop|status|state|progress|logs`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from akira_cli.cli.common import (
    ConfigOption,
    RootOption,
    TaskIdOption,
    TaskRootOption,
    exits,
    find_path,
    load_task,
    store_for,
    workspace_and_config,
)
from akira_cli.cli.loop_start import (
    criteria_warnings,
    git_preflight,
    new_loop,
    nothing_to_do,
    refuse_unfinished,
    review_when_warnings,
    spawn_detached,
    start_lock,
    warn_short_secrets,
)
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line

app = typer.Typer(help="Run and control autonomous loops.", no_args_is_help=True)
STARTING_GRACE_SECONDS = 5.0
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
) -> int:
    """Start a loop on a task file."""
    from akira_cli.agents.base import preflight
    from akira_cli.cli.agent_preflight import at_start as check_agent_at_start
    from akira_cli.loop.session import agent_workdir, run_session
    from akira_cli.review.build import preflight as review_preflight
    from akira_cli.sandbox.session import baseline, resolve_sandbox
    from akira_cli.tasks.parser import parse_task_text, read_task_bytes
    from akira_cli.tasks.source import TaskSource

    overrides = {
        "autonomous_loop.max_iterations": max_iterations,
        "autonomous_loop.failure_threshold": failure_threshold,
        "agent.kind": agent,
        "autonomous_loop.parallel": parallel,
    }
    workspace, cfg = workspace_and_config(root, config, overrides, task)
    path = find_path(workspace, str(task))
    if path is None:
        raise AkiraError(f"{task}: task file not found; check the path or run 'akira init'")
    if path.is_dir():
        if not (path / "tasks.md").is_file():
            raise AkiraError(f"{path} is a folder without tasks.md; pass the tasks.md file")
        path = path / "tasks.md"
    workspace.require_inside(path)
    if (area := workspace.area_of(path)) in ("Done", "Needs_Action"):
        raise AkiraError(
            f"{workspace.shown(path)} is under {area}/, not a task to start: "
            + ("it is finished" if area == "Done" else "it waits for a person")
            + "; move it back under Specs/ to work on it"
        )
    warn_short_secrets(cfg)
    data = read_task_bytes(path)
    task_file = parse_task_text(data, path)
    if nothing_to_do(workspace, store_for(workspace), task_file, include_optional):
        return 0
    for warning in [
        *task_file.warnings,
        *criteria_warnings(task_file),
        *review_when_warnings(cfg, task_file),
    ]:
        typer.echo(f"akira: warning: {warning}", err=True)
    pending = [step for step in task_file.leaves(include_optional) if not step.ticked]
    preflight(cfg.agent.kind, pending, cfg)
    check_agent_at_start(workspace, cfg, pending)
    review_preflight(cfg)
    git = git_preflight(workspace, path, cfg, no_git)
    if git is None and cfg.autonomous_loop.parallel > 1:
        raise AkiraError(
            f"parallel steps ({cfg.autonomous_loop.parallel}) run in git worktrees, but "
            f"{workspace.shown(path)} is not in a git work tree{' (--no-git)' if no_git else ''}; "
            "run 'git init' and commit, or use --parallel 1"
        )
    workdir = agent_workdir(workspace, cfg)
    sandboxed = resolve_sandbox(cfg, sandbox)
    failing = baseline(cfg, workspace.root, workdir, path, agent) if pending else []
    for label in failing:
        typer.echo(
            f"akira: warning: project check {label} already fails before the first step; this run "
            "records its result but does not let it block steps",
            err=True,
        )
    store = store_for(workspace)
    with start_lock(store):
        refuse_unfinished(store, path, workspace)
        state, lock = new_loop(workspace, store, path, cfg, include_optional, agent, config, detach, git)
    if sandbox is not None or not sandboxed:
        state.sandbox_flag, state.sandboxed = sandbox, sandboxed
        store.save(state)
    if failing:
        state.advisory_checks = True
        store.save(state)
    if detach:
        return spawn_detached(workspace, state, no_wait)
    typer.echo(f"akira: started {state.task_id} on {workspace.shown(path)}", err=True)
    tasks = TaskSource.seeded(path, data, task_file)  # the loop does not parse it again
    return run_session(workspace, cfg, store, state, wait=not no_wait, lock=lock, tasks=tasks)


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
    no_wait: NoWait = False,
    detach: Annotated[bool, typer.Option("--detach", metavar="", help="Run in the background.")] = False,
    config: ConfigOption = None,
    root: RootOption = None,
    sandbox: SandboxFlag = None,
) -> int:
    """Resume a paused, interrupted or escalated loop."""
    from akira_cli.cli.agent_preflight import at_resume as check_agent_at_resume
    from akira_cli.config import load_config
    from akira_cli.control import ResumeRequest, apply_resume, write_request
    from akira_cli.hooks import remove_hooks
    from akira_cli.loop.conditions import bring_back
    from akira_cli.loop.session import run_session
    from akira_cli.reports import take_guidance

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    config_file = config or (Path(state.config_file) if state.config_file else None)
    cfg = load_config(workspace.root, config_file)
    if state.status == "cancelled":
        start = command_line(workspace, "loop", "start", "--task", state.task_path)
        raise AkiraError(f"task {state.task_id} was cancelled; start a new loop with '{start}'")
    if state.status == "completed":
        if store.path(state.task_id).exists() and cfg.autonomous_loop.archive_state_file:
            store.archive(state)  # a crash fell between the final save and the archive
        typer.echo(f"akira: {state.task_id} is already completed; nothing to resume", err=True)
        return 0
    live = store.lock(state.task_id).holder()  # read once: the process may exit meanwhile
    if live is not None and state.status == "running":
        raise AkiraError(f"task {state.task_id} is already being run by process {live}; it is not paused")
    if live is None:  # before anything on disk moves: a missing agent CLI is one line (issue 29 #9)
        check_agent_at_resume(workspace, cfg, state)
    # Guidance a person wrote in the escalation or intervention file and --guidance both count;
    # the files are archived with the state, so no stale request is left in Needs_Action/.
    text = "\n\n".join(part for part in (take_guidance(workspace, state.task_id), guidance) if part) or None
    request = ResumeRequest(max_iterations=max_iterations, reset_failures=reset_failures, guidance=text)
    if live is not None:
        # The request must exist before the hook goes: deleting the hook wakes the process.
        write_request(store.dir, state.task_id, request)
        remove_hooks(workspace, state.task_id)
        bring_back(workspace, state)
        typer.echo(f"akira: resumed {state.task_id}; process {live} continues", err=True)
        return 0
    if state.git is not None:  # never switch branches under a person's feet: refuse first
        from akira_cli.loop.session import git_run

        git_run(workspace, cfg, state)
    from akira_cli.sandbox.session import resolve_sandbox

    flag = state.sandbox_flag if sandbox is None else sandbox
    state.sandbox_flag, state.sandboxed = flag, resolve_sandbox(cfg, flag)
    remove_hooks(workspace, state.task_id)
    apply_resume(state, request)
    bring_back(workspace, state)
    if detach:
        store.save(state)
        return spawn_detached(workspace, state, no_wait)
    typer.echo(f"akira: resuming {state.task_id} at iteration {state.iteration}", err=True)
    return run_session(workspace, cfg, store, state, wait=not no_wait)
