"""`akira loop start|resume|stop|status|state|progress|logs`."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from akira_cli.cli.common import (
    ConfigOption,
    RootOption,
    TaskIdOption,
    exits,
    find_path,
    load_task,
    same_file,
    store_for,
    workspace_and_config,
)
from akira_cli.errors import AkiraError
from akira_cli.redaction import MIN_SECRET, too_short
from akira_cli.workspace import Workspace, command_line

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.git.run import GitRun
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore, TaskLock
    from akira_cli.tasks.model import TaskFile


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
    root: RootOption = None,
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
    for warning in [*task_file.warnings, *criteria_warnings(task_file)]:
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


def criteria_warnings(task_file: TaskFile) -> list[str]:
    """The spec's criteria file that does not parse, and ids steps name that it lacks (SPEC 16)."""
    from akira_cli.criteria.refs import unknown_id_warnings
    from akira_cli.criteria.spec import load_spec

    spec = load_spec(task_file.path)
    if spec is None:
        return []
    return spec.warnings + (unknown_id_warnings(task_file, spec) if spec.criteria else [])


@contextlib.contextmanager
def start_lock(store: StateStore) -> Iterator[None]:
    from filelock import Timeout

    try:
        with store.start_lock():
            yield
    except Timeout:
        raise AkiraError(
            f"another 'akira loop start' in {store.dir.parent} did not finish within a minute; try again"
        ) from None


def new_loop(
    workspace: Workspace,
    store: StateStore,
    path: Path,
    cfg: Config,
    include_optional: bool,
    agent: str | None,
    config: Path | None,
    detach: bool,
    git: GitRun | None = None,
) -> tuple[LoopState, TaskLock | None]:
    """The new loop's state, saved, with its lock taken (a detached child takes its own). On a
    git-native run the task branch is made first: no state is ever saved without it (a kill -9
    in between would resume the run as one without git)."""
    from akira_cli.state.models import LoopState

    now, stat = datetime.now(UTC), path.stat()
    state = LoopState(
        task_id=workspace.new_task_id(now, set(store.task_ids())),
        task_path=str(path),
        feature=workspace.feature_of(path),
        max_iterations=cfg.autonomous_loop.max_iterations,
        parallel=cfg.autonomous_loop.parallel,
        failure_threshold=cfg.autonomous_loop.failure_threshold,
        include_optional=include_optional,
        agent_kind=agent,
        config_file=str(config.resolve()) if config else None,
        task_file_identity=(stat.st_dev, stat.st_ino),
    )
    if git is not None:
        state.git = git.start(state, state.feature)
    store.save(state)
    if detach:
        return state, None
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id} ({path.name})")
    return state, lock


def git_preflight(workspace: Workspace, path: Path, cfg: Config, no_git: bool) -> GitRun | None:
    """The run's git side (SPEC 12) when the task file lies in a git work tree; a repository
    with no commit yet, or a detached HEAD with `git.branch: ""`, is refused before anything is
    written."""
    from akira_cli.git.run import GitRun

    git = GitRun.detect(workspace.root, path, cfg.git, no_git)
    if git is not None:
        git.preflight()
    return git


def warn_short_secrets(cfg: Config) -> None:
    key = cfg.llm.api_key.get_secret_value() if cfg.llm.api_key else None
    for name in too_short(os.environ, key):
        typer.echo(
            f"akira: warning: {name} is shorter than {MIN_SECRET} characters, so it is not masked "
            "in what akira writes (masking it would garble the text); use the real key",
            err=True,
        )


def refuse_unfinished(store: StateStore, path: Path, workspace: Workspace) -> None:
    for _, state in store.scan():
        if state is None or state.status in ("completed", "cancelled"):
            continue
        if not same_file(Path(state.task_path), path):
            continue
        holder = store.lock(state.task_id).holder()
        if holder is not None:
            raise AkiraError(
                f"task {state.task_id} on {path} is already being run by process "
                f"{holder}; stop it with "
                f"'{command_line(workspace, 'loop', 'stop', '--task-id', state.task_id)}'"
            )
        raise AkiraError(
            f"{path} already has an unfinished loop {state.task_id} ({state.status}); continue it "
            f"with '{command_line(workspace, 'loop', 'resume', '--task-id', state.task_id)}'"
        )


def spawn_detached(workspace: Workspace, state: LoopState, no_wait: bool) -> int:
    out = workspace.state_dir / "logs" / f"{state.task_id}.out"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "akira_cli",
        "loop",
        "resume",
        "--task-id",
        state.task_id,
        "--root",
        str(workspace.root),
    ]
    command += ["--no-wait"] if no_wait else []
    with out.open("ab") as handle:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=workspace.root,
        )
    typer.echo(state.task_id)
    typer.echo(
        f"akira: {state.task_id} runs in the background as process {process.pid}; "
        f"follow it with '{command_line(workspace, 'loop', 'logs', '--task-id', state.task_id, '--follow')}'",
        err=True,
    )
    return 0


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


def bring_back(workspace: Workspace, state: LoopState) -> None:
    """A task a person parked in Needs_Action/ goes back under Specs/ on resume."""
    from akira_cli.loop.conditions import TaskLocator

    found = TaskLocator(workspace, None, state.task_file_identity).locate(Path(state.task_path))
    if found is not None:
        state.task_path = str(found)
    path = workspace.require_inside(Path(state.task_path))
    if not path.is_file():
        raise AkiraError(
            f"task file {path} not found; restore it (or move it back under Specs/) and resume again"
        )
    if workspace.area_of(path) != "Needs_Action":
        return
    target = workspace.specs / (state.feature or path.stem) / "tasks.md"
    if target.exists():
        raise AkiraError(f"cannot move {path} back to {target}: a file is already there")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(target))
    state.task_path = str(target)
