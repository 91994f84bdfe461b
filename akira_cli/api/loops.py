"""`start` and `resume`: a run made ready (refused before anything is written when it cannot
work), then run here to its stop, or in a process of its own (`detach`, the default)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.api.lookup import find_path, load_task, moved_away, store_for, workspace_and_config
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line

if TYPE_CHECKING:
    from akira_cli.api.models import Finished, Note, Resumed, Started
    from akira_cli.config import Config
    from akira_cli.state.lock import TaskLock
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore
    from akira_cli.tasks.source import TaskSource

Say = Callable[[str], None]
"""Where a run's notes go before it runs (warnings; "started ..."): one line each."""


def quiet(line: str) -> None:
    pass


def always() -> bool:
    return True


def start(
    root: str | Path | None,
    task: str | Path,
    *,
    config: Path | None = None,
    max_iterations: int | None = None,
    failure_threshold: int | None = None,
    agent: str | None = None,
    include_optional: bool = False,
    detach: bool = True,
    no_wait: bool = False,
    no_git: bool = False,
    parallel: int | None = None,
    sandbox: bool | None = None,
    follow: bool = False,
    settings: Mapping[str, Any] | None = None,
    own_checkout: bool = False,
    show: bool = False,
    say: Say = quiet,
    go_on: Callable[[], bool] = always,
) -> Started | Finished | Note:
    """A new loop on the task file `task` (a path from here or from the workspace, or its feature
    folder); a task file whose steps are all ticked starts nothing (`Note`). `settings`: more
    dotted config keys over the files' (`{"git.push": "origin"}`). `own_checkout`: the checkout
    is akira's own (a fleet worker's clone, its setup run), so no person's uncommitted work is
    refused there.
    Detached, it returns once the state exists, with the task id and the process; else it runs
    the loop here (with the live display when `show`) and returns how it ended. `follow`: after
    the pull request, follow its checks and reviews (`follow:` with its defaults, when the config
    has none). `go_on` is asked once the checks are done, before anything is written: False (a
    client that cancelled its call) starts nothing."""
    from akira_cli.agents.choice import preflight
    from akira_cli.api import checkout, prepare
    from akira_cli.api.agent_preflight import at_start
    from akira_cli.api.models import Note
    from akira_cli.api.run import agent_workdir
    from akira_cli.git.pr import forge_problem
    from akira_cli.git.worktrees import require_git
    from akira_cli.review.build import preflight as review_preflight
    from akira_cli.sandbox.session import baseline, resolve
    from akira_cli.tasks.parser import parse_task_text
    from akira_cli.tasks.reading import read_task_bytes
    from akira_cli.tasks.source import TaskSource

    overrides = {
        **(settings or {}),
        "autonomous_loop.max_iterations": max_iterations,
        "autonomous_loop.failure_threshold": failure_threshold,
        "agent.kind": agent,
        "autonomous_loop.parallel": parallel,
    }
    kept = prepare.kept_settings(settings)  # a detached run's own process reads them back
    workspace, cfg = workspace_and_config(root, config, overrides, Path(task))
    path = task_file(workspace, str(task))
    for line in prepare.short_secret_warnings(cfg):
        say(f"warning: {line}")
    data = read_task_bytes(path)
    parsed = parse_task_text(data, path)
    if done := prepare.nothing_to_do(workspace, store_for(workspace), parsed, include_optional):
        return Note(task_id="", status="completed", pid=None, message=done)
    for line in [
        *parsed.warnings,
        *prepare.criteria_warnings(parsed),
        *prepare.review_when_warnings(cfg, parsed),
    ]:
        say(f"warning: {line}")
    pending = [step for step in parsed.leaves(include_optional) if not step.ticked]
    for line in prepare.iteration_warnings(cfg, len(pending)):
        say(f"warning: {line}")
    preflight(cfg.agent.kind, pending, cfg)
    at_start(workspace, cfg, pending)
    review_preflight(cfg)
    git = prepare.git_preflight(workspace, path, cfg, no_git)
    require_git(cfg.autonomous_loop.parallel, git, workspace.shown(path), no_git)
    if git is not None and (no_pull_request := forge_problem(git.root, cfg.git)):
        say(f"warning: {no_pull_request}")
    for line in prepare.follow_warnings(cfg, follow):
        say(f"warning: {line}")
    workdir = agent_workdir(workspace, cfg)
    sandboxed = resolve(cfg, sandbox, lambda line: say(f"warning: {line}"))
    if sandboxed:
        checkout.refuse_hidden_agent(cfg, pending, workdir, workspace.root)
    failing = baseline(cfg, workspace.root, workdir, path, agent) if pending else []
    for label in failing:
        say(
            f"warning: project check {label} already fails before the first step; this run "
            "records its result but does not let it block steps"
        )
    if not go_on():
        raise AkiraError(
            f"the start of {workspace.shown(path)} was cancelled before its run began; nothing started"
        )
    store = store_for(workspace)
    with prepare.start_lock(store):
        prepare.refuse_unfinished(store, path, workspace)
        checkout.refuse_for_checkout(store, git, workspace, path, own_checkout)
        ticked = frozenset(step.id for step in parsed.leaves(True) if step.ticked)
        state, lock = prepare.new_loop(
            workspace, store, path, cfg, include_optional, agent, config, detach, git, say, ticked
        )
    if sandbox is not None or not sandboxed or kept:
        state.sandbox_flag, state.sandboxed, state.settings = sandbox, sandboxed, kept
        store.save(state)
    if failing or follow:
        state.advisory_checks, state.follow = bool(failing), follow
        store.save(state)
    if detach:
        return started(store, state, prepare.spawn_detached(workspace, state, no_wait))
    say(f"started {state.task_id} on {workspace.shown(path)}")
    tasks = TaskSource.seeded(path, data, parsed)  # the loop does not parse it again
    return here(workspace, cfg, store, state, no_wait, show, lock, tasks)


def task_file(workspace: Workspace, ref: str) -> Path:
    """The tasks.md a start names, inside the workspace and not finished or parked."""
    path = find_path(workspace, ref)
    if path is None:
        went = moved_away(workspace, ref) or "check the path or run 'akira init'"
        raise AkiraError(f"{ref}: task file not found; {went}")
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
    return path


def exam_steps(state: LoopState, wanted: list[str]) -> list[str]:
    """The steps a person lets change their exam: each must be an open step the run has tried."""
    done = state.completed_ids()
    for step_id in wanted:
        if step_id not in state.steps or step_id in done:
            tried = sorted(set(state.steps) - done)
            raise AkiraError(
                f"--accept-exam {step_id}: task {state.task_id} has no open step {step_id} that it tried; "
                + (f"its open steps that it tried: {', '.join(tried)}" if tried else "it tried no open step")
            )
    return wanted


def resume(
    root: str | Path | None,
    task_id: str,
    *,
    max_iterations: int | None = None,
    reset_failures: bool = False,
    guidance: str | None = None,
    accept_exam: list[str] | None = None,
    no_wait: bool = False,
    detach: bool = True,
    config: Path | None = None,
    sandbox: bool | None = None,
    show: bool = False,
    say: Say = quiet,
) -> Started | Resumed | Finished | Note:
    """A paused, interrupted or escalated loop goes on: a live process that waits is told to
    continue (`Resumed`); else the loop runs again, detached or here. A completed loop has
    nothing to resume (`Note`)."""
    from akira_cli.api import prepare
    from akira_cli.api.agent_preflight import at_resume
    from akira_cli.api.models import Note, Resumed
    from akira_cli.config import load_config
    from akira_cli.hooks import remove_hooks
    from akira_cli.reports import take_guidance
    from akira_cli.resume_requests import ResumeRequest, apply_resume, write_request

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    config_file = config or (Path(state.config_file) if state.config_file else None)
    cfg = load_config(workspace.root, config_file, state.settings)
    if state.status == "cancelled":
        again = command_line(workspace, "loop", "start", "--task", state.task_path)
        raise AkiraError(f"task {state.task_id} was cancelled; start a new loop with '{again}'")
    if state.status == "completed":
        if store.path(state.task_id).exists() and cfg.autonomous_loop.archive_state_file:
            store.archive(state)  # a crash fell between the final save and the archive
        message = f"{state.task_id} is already completed; nothing to resume"
        return Note(task_id=state.task_id, status=state.status, pid=None, message=message)
    live = store.lock(state.task_id).holder()  # read once: the process may exit meanwhile
    if live is not None and state.status in ("running", "following"):
        raise AkiraError(f"task {state.task_id} is already being run by process {live}; it is not paused")
    if live is None:  # before anything on disk moves: a missing agent CLI is one line
        at_resume(workspace, cfg, state)
    # Guidance a person wrote in the escalation or intervention file and `guidance` both count;
    # the files are archived with the state, so no stale request is left in Needs_Action/.
    from akira_cli.resume_requests import bounded_guidance

    if guidance:
        bounded_guidance(guidance, "the guidance")
    text = "\n\n".join(part for part in (take_guidance(workspace, state.task_id), guidance) if part) or None
    accepted = exam_steps(state, accept_exam or [])
    request = ResumeRequest(
        max_iterations=max_iterations, reset_failures=reset_failures, guidance=text, accept_exam=accepted
    )
    if live is not None:
        # The request must exist before the hook goes: deleting the hook wakes the process.
        write_request(store.dir, state.task_id, request)
        remove_hooks(workspace, state.task_id)
        prepare.bring_back(workspace, state)
        return Resumed(task_id=state.task_id, status="running", pid=live)
    if state.git is not None:  # never switch branches under a person's feet: refuse first
        from akira_cli.api.run import git_run

        git_run(workspace, cfg, state)
    from akira_cli.sandbox.session import resolve

    flag = state.sandbox_flag if sandbox is None else sandbox
    state.sandbox_flag, state.sandboxed = flag, resolve(cfg, flag, lambda line: say(f"warning: {line}"))
    remove_hooks(workspace, state.task_id)
    apply_resume(state, request)
    prepare.bring_back(workspace, state)
    if detach:
        prepare.save_as_read(workspace, store, state)
        return started(store, state, prepare.spawn_detached(workspace, state, no_wait))
    say(f"resuming {state.task_id} at iteration {state.iteration}")
    return here(workspace, cfg, store, state, no_wait, show, None, None)


def follow(
    root: str | Path | None,
    task_id: str,
    *,
    config: Path | None = None,
    detach: bool = True,
    no_wait: bool = False,
    show: bool = False,
    say: Say = quiet,
) -> Started | Finished:
    """Follows a run's pull request after the run (a person's review the next morning): its
    checks and review comments, until it is green or needs a person, as `follow:` says (its
    defaults when the config has none). HEAD must be on the task branch: the fixes are made there."""
    from akira_cli.api import prepare
    from akira_cli.api.run import git_run
    from akira_cli.config import load_config

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    cfg = load_config(
        workspace.root, config or (Path(state.config_file) if state.config_file else None), state.settings
    )
    prepare.can_follow(workspace, store, state, cfg)
    run = git_run(workspace, cfg, state)  # never switch branches under a person's feet
    assert run is not None and state.git is not None and state.git.pr_url
    from akira_cli.follow.follower import start_watch
    from akira_cli.sections import FollowSettings

    store.unarchive(state.task_id)
    state.follow, state.status, state.stop_reason = True, "following", ""
    state.stop_conditions.clear()
    state.pull_request = start_watch(state, (cfg.follow or FollowSettings()).max_rounds, run.plumb.head()[0])
    store.save(state)
    if detach:
        return started(store, state, prepare.spawn_detached(workspace, state, no_wait))
    say(f"following {state.git.pr_url} for {state.task_id}")
    return here(workspace, cfg, store, state, no_wait, show, None, None)


def started(store: StateStore, state: LoopState, process: subprocess.Popen[bytes]) -> Started:
    from akira_cli.api.models import Started
    from akira_cli.api.prepare import running_as

    status = running_as(store, state, process)
    return Started(task_id=state.task_id, status=status, pid=process.pid)


def here(
    workspace: Workspace,
    cfg: Config,
    store: StateStore,
    state: LoopState,
    no_wait: bool,
    show: bool,
    lock: TaskLock | None,
    tasks: TaskSource | None,
) -> Finished:
    from akira_cli.api.run import run

    return run(workspace, cfg, store, state, wait=not no_wait, show=show, lock=lock, tasks=tasks)
