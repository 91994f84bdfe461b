"""`akira loop status|state|progress|logs`: the commands that only read (they never take a lock)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from akira_cli.cli.common import JsonOption, RootOption, TaskIdOption, exits, load_task, store_for
from akira_cli.cli.loop_cmd import STARTING_GRACE_SECONDS, app
from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace

if TYPE_CHECKING:
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore


@app.command("status")
@exits
def status(
    task_id: Annotated[
        str | None, typer.Option("--task-id", help="One loop (id, task file or feature); all when left out.")
    ] = None,
    json_out: JsonOption = False,
    root: RootOption = None,
) -> int:
    """One loop's status, or a dashboard of every loop."""
    from akira_cli.cli.status_view import dashboard, plain_dashboard, summary

    workspace = Workspace.resolve(root)
    store = store_for(workspace)
    if task_id:
        _, state = load_task(workspace, task_id)
        row = summary(store, state)
        typer.echo(json.dumps(row, indent=2) if json_out else _status_text(row))
        return 0
    rows, corrupt = [], []
    for path, found in store.scan():
        if found is None:
            corrupt.append(str(path))
        else:
            rows.append(summary(store, found))
    rows.sort(key=lambda row: row["task_id"])
    if json_out:
        typer.echo(json.dumps({"loops": rows, "corrupt": corrupt}, indent=2))
    elif sys.stdout.isatty():
        from rich.console import Console

        Console().print(dashboard(rows, corrupt))
    else:
        typer.echo(plain_dashboard(rows, corrupt))
    return 0


def _status_text(row: dict[str, object]) -> str:
    lines = [f"{key}: {value}" for key, value in row.items() if value not in (None, "", [])]
    return "\n".join(lines)


@app.command("state")
@exits
def state_cmd(task_id: TaskIdOption, json_out: JsonOption = False, root: RootOption = None) -> int:
    """Print the state file."""
    from rich.console import Console

    store, state = load_task(Workspace.resolve(root), task_id)
    text = state.model_dump_json(indent=None if json_out else 2)
    if json_out or not sys.stdout.isatty():
        typer.echo(text)
    else:
        Console().print_json(text)
    history = state.history
    if not json_out and (history.completed_sealed or history.failed_dropped or history.reflections_dropped):
        journal = store.journal_path(state.task_id)
        typer.echo(
            f"akira: the state file keeps the last few of each list; the full history "
            f"({state.completed_total} completed steps, every attempt) is in {journal}",
            err=True,
        )
    return 0


def _criteria(state: LoopState, store: StateStore) -> dict[str, object]:
    """The spec's acceptance criteria and their evidence (SPEC 16), as the report's table."""
    from akira_cli.criteria.table import table_for, to_json

    found = table_for(Path(state.task_path), state, store.all_completed(state))
    rows = to_json(found[1]) if found else []
    return {"criteria": rows, "not_covered": [row["id"] for row in rows if not row["covered"]]}


@app.command("progress")
@exits
def progress(task_id: TaskIdOption, json_out: JsonOption = False, root: RootOption = None) -> int:
    """Steps done, the current step and the rate of success."""
    from akira_cli.cli.status_view import effective_status

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    steps = _steps(state, store)
    done = sum(1 for step in steps if step["done"])
    data = {
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
        **_criteria(state, store),
    }
    if json_out:
        typer.echo(json.dumps(data, indent=2))
        return 0
    breakdown = state.done_breakdown()
    typer.echo(
        f"{state.task_id}: {done}/{len(steps)} steps ({data['percent']}%), iteration "
        f"{state.iteration}/{state.max_iterations}, attempt success rate {state.success_rate:.0%}; "
        f"verified {breakdown['verified']}, unverified {breakdown['unverified']}, "
        f"by a person {breakdown['done_by_person']}, by the agent's claim {breakdown['done_by_claim']}; "
        f"{state.usage.total_tokens} tokens, ${state.usage.cost_usd:.4f}"
    )
    running = {data["current_step"], *(current.step_id for current in state.current_steps)}
    for step in steps:
        mark = "x" if step["done"] else ("-" if step["id"] in running else " ")
        commit = f" {step['commit']}" if step.get("commit") else ""
        commit += f" review: {step['review']}" if step.get("review") else ""
        typer.echo(f"  [{mark}] {step['id']} {step['title']} ({step['attempts']} attempt(s)){commit}")
    criteria, missing = data["criteria"], data["not_covered"]
    if isinstance(criteria, list) and criteria and isinstance(missing, list):
        without = f"; without: {', '.join(missing)}" if missing else ""
        typer.echo(f"criteria with evidence: {len(criteria) - len(missing)}/{len(criteria)}{without}")
    if data["pull_request"]:
        typer.echo(f"pull request: {data['pull_request']}")
    return 0


def _steps(state: LoopState, store: StateStore) -> list[dict[str, object]]:
    from akira_cli.tasks.parser import parse_task_file

    path = Path(state.task_path)
    done_ids = state.completed_ids()
    try:
        task = parse_task_file(path)
    except AkiraError:
        return [
            {
                "id": r.step_id,
                "title": r.description,
                "done": r.step_id in done_ids,
                "attempts": r.attempts_total,
            }
            for r in state.steps.values()
        ]
    leaves = task.leaves(state.include_optional)
    completed = store.all_completed(state)
    attempts = {s.step_id: s.attempts for s in completed}
    attempts.update({r.step_id: r.attempts_total for r in state.steps.values()})
    commits = {s.step_id: s.commit[:8] for s in completed if s.commit}
    reviews = {s.step_id: s.review for s in completed if s.review}
    return [
        {
            "id": s.id,
            "title": s.title,
            "done": s.ticked or s.id in done_ids,
            "attempts": attempts.get(s.id, 0),
            "commit": commits.get(s.id),
            "review": reviews.get(s.id),
        }
        for s in leaves
    ]


@app.command("logs")
@exits
def logs(
    task_id: TaskIdOption,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", metavar="", help="Keep printing new events live.")
    ] = False,
    json_out: JsonOption = False,
    root: RootOption = None,
) -> int:
    """Show the event history; --follow tails it until the loop ends."""
    from akira_cli.events import read_events

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    path = workspace.log_path(state.task_id)
    seen = 0
    while True:
        events = list(read_events(path))
        for event in events[seen:]:
            typer.echo(event.model_dump_json() if json_out else event.line())
        seen = len(events)
        if not follow or not _live(store, state.task_id):
            return 0
        time.sleep(0.25)


def _live(store: StateStore, task_id: str) -> bool:
    """A process holds the task, or one was just started (--detach) and has not locked it yet."""
    if store.lock(task_id).is_held():
        return True
    path = store.path(task_id)
    try:
        fresh = time.time() - path.stat().st_mtime < STARTING_GRACE_SECONDS
    except OSError:
        return False
    return fresh and store.load(task_id).status == "running"
