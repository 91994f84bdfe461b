"""The `loop` commands that stop or end a loop: stop (a hook, or --force), cancel."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from akira_cli.cli.common import RootOption, TaskIdOption, exits, load_task
from akira_cli.cli.loop_cmd import app
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line

if TYPE_CHECKING:
    from akira_cli.state.models import LoopState


@app.command("stop")
@exits
def stop(
    task_id: TaskIdOption,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            metavar="",
            help="Signal the live process: it kills the running command, records the attempt as interrupted "
            "and exits 3.",
        ),
    ] = False,
    save_state: Annotated[
        bool,
        typer.Option(
            "--save-state",
            metavar="",
            help="With no live process, mark the state paused whatever its status (an interrupted one is "
            "marked paused without it).",
        ),
    ] = False,
    root: RootOption = None,
) -> int:
    """Pause a loop with a stop hook (--force also kills the running command)."""
    from akira_cli.hooks import write_hook

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    if state.status in ("completed", "cancelled"):
        raise AkiraError(f"task {state.task_id} is already {state.status}; nothing to stop")
    hook = write_hook(workspace, state)
    pid = store.lock(state.task_id).holder()
    waiting = state.status in ("paused", "needs_action") or state.waiting_until is not None
    if force and pid:
        os.kill(pid, signal.SIGTERM)
    if pid is None and (save_state or state.status == "running"):
        state.status = "paused"
        state.stop_conditions.stop_hook_triggered = True
        store.save(state)
    typer.echo(f"akira: wrote {workspace.shown(hook)}; {stop_message(state, pid, force, waiting)}", err=True)
    return 0


def stop_message(state: LoopState, pid: int | None, force: bool, waiting: bool) -> str:
    if pid is None:
        kill = "; there is no command to kill" if force else ""
        return f"no process runs {state.task_id}, its state is {state.status}{kill}"
    if waiting:
        return f"process {pid} was waiting ({state.status}); it {'exits now' if force else 'stays paused'}"
    if force:
        return f"process {pid} stops now: its running command is killed, the attempt recorded as interrupted"
    return f"process {pid} pauses once its running command finishes"


@app.command("cancel")
@exits
def cancel(task_id: TaskIdOption, root: RootOption = None) -> int:
    """End a loop for good: status cancelled, state archived, task file left where it is."""
    from akira_cli.hooks import remove_hooks

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    if state.status in ("completed", "cancelled"):
        raise AkiraError(f"task {state.task_id} is already {state.status}; there is nothing to cancel")
    holder = store.lock(state.task_id).holder()
    if holder is not None:
        stop_it = command_line(workspace, "loop", "stop", "--task-id", state.task_id, "--force")
        raise AkiraError(
            f"task {state.task_id} is being run by process {holder}; stop it first with '{stop_it}'"
        )
    state.status = "cancelled"
    state.stop_reason = "cancelled by a person with 'akira loop cancel'"
    remove_hooks(workspace, state.task_id)
    store.archive(state)
    typer.echo(
        f"akira: cancelled {state.task_id}; its state is archived, the task file stays at "
        f"{workspace.shown(Path(state.task_path))}",
        err=True,
    )
    return 0


@app.command("undo")
@exits
def undo(
    task_id: TaskIdOption,
    step: Annotated[
        str, typer.Option("--step", help="The step whose commit is reverted, with every later step's.")
    ],
    root: RootOption = None,
) -> int:
    """Revert a git-native run's commits for a step and every later one; the loop pauses."""
    from akira_cli.config import load_config
    from akira_cli.events import EventBus, EventType, JsonlLog
    from akira_cli.git import undo as undoing
    from akira_cli.git.run import GitRun
    from akira_cli.loop.handoff import after_undo

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id}")  # refused while a process runs it
    try:
        cfg = load_config(workspace.root, Path(state.config_file) if state.config_file else None)
        run = GitRun.detect(workspace.root, Path(state.task_path), cfg.git) if state.git else None
        if run is None:
            raise AkiraError(f"task {state.task_id} is not a git-native run; there are no commits to revert")
        archived = store.archived_path(state.task_id)
        undone = undoing.undo(run, state, step, store)
        if archived.exists():
            os.replace(archived, store.path(state.task_id))  # a completed loop is active again
        store.save(state)
        log = JsonlLog(workspace.log_path(state.task_id))
        bus = EventBus(state.task_id)
        bus.subscribe(log)
        steps = [done.step_id for done in undone]
        try:
            bus.emit(EventType.LEDGER, step, **undone_data(steps))
            pushed = after_undo(workspace, cfg, state, store, run, bus)  # the remote, the pull request
            store.save(state)
        finally:
            log.close()
    finally:
        lock.release()
    resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
    branch = state.git.branch if state.git else ""
    names = ", ".join(done.step_id for done in undone)
    typer.echo(
        f"akira: reverted step(s) {names} on {branch}{pushed}; to do them again, run: {resume}", err=True
    )
    return 0


def undone_data(steps: list[str]) -> dict[str, object]:
    return {"action": "undone", "by": "person", "steps": steps}
