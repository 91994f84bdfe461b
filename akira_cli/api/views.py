"""The reading verbs: `status`, `progress`, `logs` and `report`. They never take a lock."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.api.lookup import load_task, store_for
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.api.models import Dashboard, Logs, LoopSummary, Progress, Report, StepRow
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore

STARTING_GRACE_SECONDS = 5.0
"""A state this fresh, still `running`, is a detached run whose process has not locked it yet."""


def status(root: str | Path | None, task_id: str | None = None) -> LoopSummary | Dashboard:
    """One loop's status, or (no `task_id`) every loop's and the state files that cannot be read."""
    from akira_cli.api.models import Dashboard, LoopSummary
    from akira_cli.api.summary import summary

    workspace = Workspace.resolve(root)
    store = store_for(workspace)
    if task_id:
        _, state = load_task(workspace, task_id)
        return LoopSummary.model_validate(summary(store, state))
    rows, corrupt = [], []
    for path, found in store.scan():
        if found is None:
            corrupt.append(str(path))
        else:
            rows.append(summary(store, found))
    rows.sort(key=lambda row: row["task_id"])
    return Dashboard(loops=[LoopSummary.model_validate(row) for row in rows], corrupt=corrupt)


def progress(root: str | Path | None, task_id: str) -> Progress:
    """Steps done, the current step, the rate of success, the spec's criteria and their evidence."""
    from akira_cli.api.models import Progress
    from akira_cli.api.summary import effective_status

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    steps = step_rows(state, store)
    done = sum(1 for step in steps if step.done)
    return Progress.model_validate(
        {
            "task_id": state.task_id,
            "status": effective_status(store, state),
            "steps_done": done,
            "steps_total": len(steps),
            "percent": round(100 * done / len(steps), 1) if steps else 0.0,
            "iteration": state.iteration,
            "max_iterations": state.max_iterations,
            "success_rate": round(state.success_rate, 4),
            "current_step": state.current_step.step_id if state.current_step else None,
            "current_steps": [
                {"step_id": step.step_id, "attempt": step.attempt, "worktree": step.worktree}
                for step in state.current_steps
            ],
            **state.done_breakdown(),
            "tokens": state.usage.total_tokens,
            "cost_usd": round(state.usage.cost_usd, 4),
            "steps": steps,
            "pull_request": state.git.pr_url if state.git else None,
            **criteria(state, store),
        }
    )


def criteria(state: LoopState, store: StateStore) -> dict[str, object]:
    """The spec's acceptance criteria and their evidence (the criteria table), as the report's table."""
    from akira_cli.criteria.table import table_for, to_json

    found = table_for(Path(state.task_path), state, store.all_completed(state))
    rows = to_json(found[1]) if found else []
    return {"criteria": rows, "not_covered": [row["id"] for row in rows if not row["covered"]]}


def step_rows(state: LoopState, store: StateStore) -> list[StepRow]:
    """Every step of the task file; from the state alone when the file cannot be read."""
    from akira_cli.api.models import StepRow
    from akira_cli.tasks.parser import parse_task_file

    path = Path(state.task_path)
    done_ids = state.completed_ids()
    try:
        task = parse_task_file(path)
    except AkiraError:
        return [
            StepRow(id=r.step_id, title=r.description, done=r.step_id in done_ids, attempts=r.attempts_total)
            for r in state.steps.values()
        ]
    completed = store.all_completed(state)
    attempts = {r.step_id: r.tries or r.attempts_total for r in state.steps.values()}
    attempts.update({s.step_id: s.attempts for s in completed if s.attempts})  # as the report says
    commits = {s.step_id: s.commit[:8] for s in completed if s.commit}
    reviews = {s.step_id: s.review for s in completed if s.review}
    return [
        StepRow(
            id=s.id,
            title=s.title,
            done=s.ticked or s.id in done_ids,
            attempts=attempts.get(s.id, 0),
            commit=commits.get(s.id),
            review=reviews.get(s.id),
        )
        for s in task.leaves(state.include_optional)
    ]


def logs(root: str | Path | None, task_id: str, tail: int | None = None) -> Logs:
    """The event history (the last `tail` events when given), and whether a process runs it."""
    from akira_cli.api.models import Logs
    from akira_cli.events import read_events

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    events = [event.model_dump(mode="json") for event in read_events(workspace.log_path(state.task_id))]
    if tail is not None:
        events = events[-tail:] if tail > 0 else []
    return Logs(task_id=state.task_id, events=events, live=live(store, state.task_id))


def live(store: StateStore, task_id: str) -> bool:
    """A process holds the task, or one was just started (detached) and has not locked it yet."""
    if store.lock(task_id).is_held():
        return True
    path = store.path(task_id)
    try:
        fresh = time.time() - path.stat().st_mtime < STARTING_GRACE_SECONDS
    except OSError:
        return False
    return fresh and store.load(task_id).status in ("running", "following")


def report(root: str | Path | None, task_id: str) -> Report:
    """The report that says most about the loop now: its completion report once it completed,
    the escalation or intervention request while it waits for a person, else its progress
    report."""
    from akira_cli.api.models import Report

    workspace = Workspace.resolve(root)
    _, state = load_task(workspace, task_id)
    candidates = {
        "completion": workspace.reports / f"{state.task_id}.md",
        "escalation": workspace.needs_action / f"escalation_{state.task_id}.md",
        "intervention": workspace.needs_action / f"intervention_{state.task_id}.md",
        "progress": workspace.root / "Logs" / "progress_reports" / f"{state.task_id}.md",
    }
    order = ["completion", "escalation", "intervention", "progress"]
    if state.status == "needs_action":
        order = ["escalation", "intervention", "progress", "completion"]
    for kind in order:
        path = candidates[kind]
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        return Report.model_validate({"kind": kind, "path": workspace.relative(path), "text": text})
    see = command_line(workspace, "loop", "progress", "--task-id", state.task_id)
    raise AkiraError(
        f"task {state.task_id} has no report yet ({state.status}); see where it stands with {in_quotes(see)}"
    )
