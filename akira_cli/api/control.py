"""The verbs that stop or end a loop, or take steps back: `stop` (a hook, or `force`),
`cancel`, `undo`."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.api.lookup import load_task
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line

if TYPE_CHECKING:
    from akira_cli.api.models import Note, Undone
    from akira_cli.git.undo import Reverted
    from akira_cli.loop.iteration import Iteration
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore


def stop(root: str | Path | None, task_id: str, *, force: bool = False, save_state: bool = False) -> Note:
    """Pauses a loop with a stop hook at its next safe boundary; `force` also signals the live
    process (its running command is killed, the attempt recorded as interrupted). With no live
    process, `save_state` marks the state paused whatever its status."""
    from akira_cli.api.models import Note
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
    if pid is None:
        state = mark_paused(store, state, save_state)
    message = f"wrote {workspace.shown(hook)}; {stop_message(state, pid, force, waiting)}"
    return Note(task_id=state.task_id, status=state.status, pid=pid, message=message)


def mark_paused(store: StateStore, state: LoopState, always: bool) -> LoopState:
    """With no live process: the state marked paused (an interrupted one, or any with
    `always`), under the task's lock and as the last process saved it. The copy read before
    the hook was written may be older: a process that saw the hook saved a step's completion
    since, and a save of that copy would lose it (the state is the ledger)."""
    lock = store.lock(state.task_id)
    try:
        lock.acquire(f"task {state.task_id}")
    except AkiraError:
        return state  # a process took it meanwhile: it pauses at the hook
    try:
        state = store.load(state.task_id)
        if state.status not in ("completed", "cancelled") and (
            always or state.status in ("running", "following")
        ):
            state.status = "paused"
            state.stop_conditions.stop_hook_triggered = True
            store.save(state)
        return state
    finally:
        lock.release()


def stop_message(state: LoopState, pid: int | None, force: bool, waiting: bool) -> str:
    if pid is None:
        kill = "; there is no command to kill" if force else ""
        return f"no process runs {state.task_id}, its state is {state.status}{kill}"
    if waiting:
        return f"process {pid} was waiting ({state.status}); it {'exits now' if force else 'stays paused'}"
    if force:
        return f"process {pid} stops now: its running command is killed, the attempt recorded as interrupted"
    return f"process {pid} pauses once its running command finishes"


def cancel(root: str | Path | None, task_id: str) -> Note:
    """Ends a loop for good: status cancelled, state archived, task file left where it is."""
    from akira_cli.api.models import Note
    from akira_cli.hooks import remove_hooks
    from akira_cli.reports import take_guidance

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
    take_guidance(workspace, state.task_id)  # its requests for a person are filed away with it
    store.archive(state)
    message = (
        f"cancelled {state.task_id}; its state is archived, the task file stays at "
        f"{workspace.shown(Path(state.task_path))}"
    )
    return Note(task_id=state.task_id, status=state.status, pid=None, message=message)


def undo(root: str | Path | None, task_id: str, step: str) -> Undone:
    """Reverts a git-native run's commits for `step` and every later step (one revert commit
    each, newest first); the loop is left paused, to do them again on resume. A run that pushes
    pushes the reverts, and its pull request's body is updated. A step with no commit of its own
    (a person ticked it) is refused, with the run that has its commit."""
    from akira_cli.api.models import Undone
    from akira_cli.config import load_config
    from akira_cli.events import EventBus, EventType, JsonlLog
    from akira_cli.git import undo as undoing
    from akira_cli.git.run import GitRun
    from akira_cli.handoff.pull_request import after_undo
    from akira_cli.loop.iteration import Iteration
    from akira_cli.redaction import redact

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    lock = store.lock(state.task_id)
    lock.acquire(f"task {state.task_id}")  # refused while a process runs it
    try:
        cfg = load_config(
            workspace.root, Path(state.config_file) if state.config_file else None, state.settings
        )
        run = (
            GitRun.detect(workspace.root, Path(state.task_path), cfg.git, root=state.git.root)
            if state.git
            else None
        )
        if run is None:
            raise AkiraError(f"task {state.task_id} is not a git-native run; there are no commits to revert")
        before = run.git.out("rev-parse", "HEAD")
        archived = store.archived_path(state.task_id)
        bus = EventBus(state.task_id)
        reverted = undoing.undo(run, state, step, store)
        forget(state, reverted, Iteration(state, bus))
        if archived.exists():
            os.replace(archived, store.path(state.task_id))  # a completed loop is active again
        store.save(state)
        made = run.git.out("rev-list", "--reverse", f"{before}..HEAD").split()
        log = JsonlLog(workspace.log_path(state.task_id))
        bus.subscribe(log)
        steps = [done.step_id for done in reverted.undone]
        warnings: list[str] = []
        try:
            bus.emit(EventType.LEDGER, step, **undone_data(steps))
            pushed = after_undo(
                workspace, cfg, state, store, run, bus, lambda text: warnings.append(redact(text))
            )
            store.save(state)
        finally:
            log.close()
    finally:
        lock.release()
    resume = command_line(workspace, "loop", "resume", "--task-id", state.task_id)
    branch = state.git.branch if state.git else ""
    message = f"reverted step(s) {', '.join(steps)} on {branch}{pushed}; to do them again, run: {resume}"
    return Undone(
        task_id=state.task_id,
        status=state.status,
        steps=steps,
        commits=made,
        branch=branch,
        message=message,
        warnings=warnings,
    )


def forget(state: LoopState, reverted: Reverted, iteration: Iteration) -> None:
    """What `git.undo` reverted, in the state: the steps no longer completed, to be done again
    from scratch, the move to Done/ undone with it, and the loop paused."""
    iteration.undone(reverted.undone)
    assert state.git is not None  # `undo` refuses a run that is not git-native
    state.git.done_commit = None
    state.git.since = reverted.since or state.git.since  # the reverted commits are not adopted again
    if reverted.moved_back is not None:
        state.task_path = str(reverted.moved_back)
    state.moved_from, state.moving_to_done = None, False
    state.status = "paused"
    names = ", ".join(done.step_id for done in reverted.undone)
    state.stop_reason = f"step(s) {names} undone by a person with 'akira loop undo'"


def undone_data(steps: list[str]) -> dict[str, object]:
    return {"action": "undone", "by": "person", "steps": steps}
