"""`akira loop tasks|status|state|progress|logs`: the commands that only read (they never take a lock)."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from akira_cli.api.lookup import load_task
from akira_cli.cli.common import JsonLinesOption, JsonOption, RootOption, TaskIdOption, exits
from akira_cli.cli.loop_cmd import app
from akira_cli.words import counted
from akira_cli.workspace import Workspace


@app.command("tasks")
@exits
def tasks(json_out: JsonOption = False, root: RootOption = None) -> int:
    """The workspace's task files (every layout), their steps done and their latest loop."""
    from akira_cli import api
    from akira_cli.workspace import Workspace

    found = api.tasks(root)
    if json_out:
        typer.echo(found.json_text())
        return 0
    if not found.tasks:
        typer.echo(found.line())
        return 0
    workspace = Workspace.resolve(root)  # the paths as they open from here (the JSON's: the workspace's)
    for task in found.tasks:
        loop = f"  {task.task_id}: {task.status}" if task.task_id else ""
        shown = workspace.shown(workspace.root / task.path)
        typer.echo(f"{shown}  {task.steps_done}/{task.steps_total} ({task.layout}){loop}")
    return 0


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
    from akira_cli import api
    from akira_cli.api.models import LoopSummary

    found = api.status(root, task_id)
    if isinstance(found, LoopSummary):
        typer.echo(found.json_text() if json_out else found.text())
        return 0
    if json_out:
        typer.echo(found.json_text())
        return 0
    from akira_cli.cli.status_view import dashboard, plain_dashboard

    rows = [loop.data() for loop in found.loops]
    if sys.stdout.isatty():
        from rich.console import Console

        Console().print(dashboard(rows, found.corrupt))
    else:
        typer.echo(plain_dashboard(rows, found.corrupt))
    return 0


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


@app.command("progress")
@exits
def progress(task_id: TaskIdOption, json_out: JsonOption = False, root: RootOption = None) -> int:
    """Steps done, the current step and the rate of success."""
    from akira_cli import api

    data = api.progress(root, task_id)
    if json_out:
        typer.echo(data.json_text())
        return 0
    typer.echo(
        f"{data.task_id}: {data.steps_done}/{data.steps_total} steps ({data.percent}%), iteration "
        f"{data.iteration}/{data.max_iterations}, attempt success rate {data.success_rate:.0%}; "
        f"verified {data.verified}, unverified {data.unverified}, changed their exam {data.changed_exam}, "
        f"by a person {data.done_by_person}, by the agent's claim {data.done_by_claim}; "
        f"{data.tokens} tokens, ${data.cost_usd:.4f}"
    )
    running = {data.current_step, *(current.step_id for current in data.current_steps)}
    for step in data.steps:
        mark = "x" if step.done else ("-" if step.id in running else " ")
        commit = f" {step.commit}" if step.commit else ""
        commit += f" review: {step.review}" if step.review else ""
        typer.echo(f"  [{mark}] {step.id} {step.title} ({counted(step.attempts, 'attempt')}){commit}")
    if data.criteria:
        missing = data.not_covered
        without = f"; without: {', '.join(missing)}" if missing else ""
        typer.echo(
            f"criteria with evidence: {len(data.criteria) - len(missing)}/{len(data.criteria)}{without}"
        )
    if data.pull_request:
        typer.echo(f"pull request: {data.pull_request}")
    return 0


@app.command("logs")
@exits
def logs(
    task_id: TaskIdOption,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", metavar="", help="Keep printing new events live.")
    ] = False,
    json_out: JsonLinesOption = False,
    root: RootOption = None,
) -> int:
    """Show the event history; --follow tails it until the loop ends."""
    from akira_cli import api
    from akira_cli.events import Event

    seen = 0
    while True:
        found = api.logs(root, task_id)
        for event in found.events[seen:]:
            parsed = Event.model_validate(event)
            typer.echo(parsed.model_dump_json() if json_out else parsed.line())
        seen = len(found.events)
        if not follow or not found.live:
            return 0
        time.sleep(0.25)
