"""What a person reads of the following: the "Checks" section of the completion report and the
pull request's body (each round: what failed, the commit that fixed it, the threads answered),
and the escalation when it gave up, which quotes the failing log."""

from __future__ import annotations

import re
from pathlib import Path

from akira_cli.errors import LoopStop
from akira_cli.events import utcnow
from akira_cli.fileio import atomic_write
from akira_cli.redaction import redact
from akira_cli.state.follow import FixItem, PullRequestWatch
from akira_cli.state.models import LoopState
from akira_cli.templates import render
from akira_cli.words import counted
from akira_cli.workspace import Workspace, command_line

OUTCOME = {
    "green": "green: every check passed and every review comment is answered",
    "needs_action": "needs a person",
    "following": "following",
}


def checks_section(state: LoopState) -> str:
    """`## Checks`, or "" when the pull request was never followed."""
    record = state.pull_request
    if record is None:
        return ""
    lines = ["", "## Checks", f"**Pull request**: {record.url} ({outcome(record)})", ""]
    for round_ in record.rounds:
        lines.append(f"- Round {round_.number}:")
        lines += [f"  - {item_line(item)}" for item in round_.items]
    if not record.rounds:
        lines.append("- No fix round was needed.")
    if record.not_acted_on:  # a stranger's words are not quoted here either: the login and where
        lines += ["", "Not acted on (only people with write access, or `follow.trusted`, may ask):"]
        lines += [f"- {code(line.removeprefix('not acted on: '))}" for line in record.not_acted_on]
    if record.phase == "needs_action" and record.gave_up:
        lines += ["", f"Stopped: {record.gave_up}"]
    return "\n".join(lines) + "\n"


def outcome(record: PullRequestWatch) -> str:
    if record.phase == "following" and record.waiting_for:
        return f"waiting for {counted(record.waiting_for, 'check')}"
    return OUTCOME[record.phase]


def item_line(item: FixItem) -> str:
    fixed = f"fixed in `{item.commit[:8]}`" if item.commit else "no commit yet"
    if item.kind == "ci":
        return f"`{item.name}` failed: {code(item.what)}; {item.step_id} {fixed}"
    answered = "answered" if item.answered else "not answered yet"
    where = f" on `{item.where}`" if item.where else ""
    return f"{item.author}'s comment{where}: {code(item.what)}; {item.step_id} {fixed}, thread {answered}"


def code(text: str) -> str:
    """A line of a log or a comment, shown as code: never Markdown a reader's forge renders."""
    line = " ".join(redact(text).split()).replace("`", "'")
    return f"`{line}`" if line else "(nothing)"


def escalation(workspace: Workspace, state: LoopState, stop: LoopStop) -> Path:
    """`Needs_Action/escalation_<id>.md` for a pull request that needs a person."""
    record = state.pull_request
    assert record is not None
    log = redact(record.last_log).rstrip() or "(no log: the checks did not finish)"
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", log))])
    path = workspace.needs_action / f"escalation_{state.task_id}.md"
    atomic_write(
        path,
        render(
            "follow_escalation.md",
            task_id=state.task_id,
            created=utcnow(),
            condition=stop.condition,
            reason=redact(stop.message),
            url=record.url,
            rounds=f"{record.round} of {record.max_rounds}",
            log=f"{fence}text\n{log}\n{fence}",
            checks=checks_section(state).lstrip("\n"),
            resume_cmd=command_line(workspace, "loop", "resume", "--task-id", state.task_id),
            cancel_cmd=command_line(workspace, "loop", "cancel", "--task-id", state.task_id),
            state_path=f".state/autonomous_loop_{state.task_id}.json",
        ).encode(),
        root=workspace.root,
    )
    return path
