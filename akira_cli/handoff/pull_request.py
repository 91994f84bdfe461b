"""Handing the night's work off as a pull request (the morning review), when the run completes or stops
with needs_action: the branch pushed once more, then one pull request opened or updated with
the completion report, written for a reader of the forge, as its body."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.errors import LoopStop
from akira_cli.events import EventBus, EventType
from akira_cli.fileio import describe_os_error
from akira_cli.git.pr import PullRequests, Request
from akira_cli.git.steps import push
from akira_cli.redaction import redact
from akira_cli.reports import Reader, completion_report, completion_text
from akira_cli.state.git_record import GitRecord
from akira_cli.state.models import LoopState
from akira_cli.words import counted
from akira_cli.workspace import Workspace, in_quotes

MAX_BODY = 60_000
AGAIN = "the next completion or stop opens or updates it (or open it by hand with gh or glab)"

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.git.pinned import Git
    from akira_cli.git.run import GitRun
    from akira_cli.git.steps import StepCommits
    from akira_cli.state.store import StateStore


def wants_pull_request(config: Config, state: LoopState, stop: LoopStop) -> bool:
    return (
        config.git.pr != "off"
        and state.git is not None
        and (stop.report == "completion" or stop.status == "needs_action")
    )


def hand_off(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    store: StateStore,
    commits: StepCommits,
    bus: EventBus,
    stop: LoopStop,
) -> str | None:
    """Opens or updates the task's pull request; its URL (also in `state.git.pr_url`)."""
    record = state.git
    if record is None:
        return None
    try:
        return _hand_off(workspace, config, state, store, commits, bus, stop, record)
    except (OSError, subprocess.SubprocessError) as exc:  # never fatal to the run: one warning
        _warn(bus, f"no pull request: {describe_os_error(exc, AGAIN) if isinstance(exc, OSError) else exc}")
        return None


def _hand_off(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    store: StateStore,
    commits: StepCommits,
    bus: EventBus,
    stop: LoopStop,
    record: GitRecord,
) -> str | None:
    commits.push()  # a push that failed at the last commit is tried once more
    stopped = None if stop.report == "completion" else stop.message
    known = record.pr_url
    url = publish(
        workspace, config, state, store, commits.run.git, lambda message: _warn(bus, message), stopped
    )
    if url and url != known:
        bus.emit(EventType.PULL_REQUEST, url=url, branch=record.branch)
        if stopped is None and config.autonomous_loop.create_completion_report:
            completion_report(workspace, state, [], store.all_completed(state))  # again, with the URL in it
    return url


def publish(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    store: StateStore,
    git: Git,
    warn: Callable[[str], object],
    stopped: str | None,
) -> str | None:
    """Opens or updates the task's pull request, the completion report as its body; `stopped`:
    why the run is not complete (said at the top; the pull request is then a draft)."""
    assert state.git is not None
    done = store.all_completed(state)
    requests = PullRequests(
        git=git,
        settings=config.git,
        record=state.git,
        body_path=workspace.state_dir / "pull_requests" / f"{state.task_id}.md",
        warn=warn,
    )
    forge = Reader.of_forge(workspace)
    request = Request(
        title=redact(title(state, {step.step_id for step in done})),
        body=fit(redact(completion_text(forge, state, [], done, stopped)), workspace, state),
        draft=config.git.pr == "draft" or stopped is not None or not_green_yet(config, state),
        stopped=stopped is not None,
    )
    return requests.publish(request)


def after_undo(
    workspace: Workspace,
    config: Config,
    state: LoopState,
    store: StateStore,
    run: GitRun,
    bus: EventBus,
    warn: Callable[[str], None],
) -> str:
    """`loop undo` on a pushed run: the reverts pushed to `git.push`, and the pull request the run
    opened updated (its body without the undone steps, and a draft again: the run is paused).
    What was done, for the command's last line; what went wrong goes to `warn` (the caller's
    answer carries it: under `akira mcp` no person reads the server's stderr), and to the log."""
    record, remote = state.git, config.git.push
    if record is None or not remote:
        return ""
    said = push(run, record.branch, remote)
    if said is not None:
        again = run.shown("push", remote, f"{record.branch}:{record.branch}")
        message = f"the reverts were not pushed to {remote}: {said}; push them with {in_quotes(again)}"
        warn(message)
        bus.emit(EventType.WARNING, message=message)
        return ""
    if config.git.pr == "off" or not record.pr_url:
        return f"; pushed to {remote}"

    def pr_warning(message: str) -> None:
        warn(message)
        bus.emit(EventType.PULL_REQUEST, warning=message)

    url = publish(workspace, config, state, store, run.git, pr_warning, state.stop_reason)
    return f"; pushed to {remote}" + (f"; pull request updated: {url}" if url else "")


def not_green_yet(config: Config, state: LoopState) -> bool:
    """A pull request akira follows stays a draft until it is green (`git.pr: ready` then marks it
    ready)."""
    watched = state.pull_request
    return (config.follow is not None or state.follow) and (watched is None or watched.phase != "green")


def fit(body: str, workspace: Workspace, state: LoopState) -> str:
    """A body GitHub and GitLab accept (GitHub stops at 65,536 characters): a longer report is
    cut, with where the whole of it is."""
    if len(body) <= MAX_BODY:
        return body
    where = workspace.relative(workspace.reports / f"{state.task_id}.md")
    note = f"\n\n… (cut: the whole report is `{where}` in the workspace)\n"
    return body[: MAX_BODY - len(note)] + note


def title(state: LoopState, done: set[str]) -> str:
    """`<feature>: <done>/<total> steps`, counted in the task file as it is now."""
    from akira_cli.tasks.parser import parse_task_text
    from akira_cli.tasks.reading import TaskFileError, read_task_bytes

    path = Path(state.task_path)
    feature = state.feature or path.parent.name
    try:
        task = parse_task_text(read_task_bytes(path), path)
    except (OSError, TaskFileError):
        return f"{feature}: {counted(len(done), 'step')} done"
    leaves = task.leaves(state.include_optional)
    finished = [s for s in leaves if s.ticked or s.id in done or task.under_ticked_parent(s)]
    return f"{feature}: {len(finished)}/{len(leaves)} steps"


def _warn(bus: EventBus, message: str) -> None:
    """Printed whole, once (the display cuts an event's line; the command must paste), and logged."""
    print(f"akira: warning: {redact(message)}", file=sys.stderr, flush=True)
    bus.emit(EventType.PULL_REQUEST, warning=message)
