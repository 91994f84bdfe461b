"""The `loop` commands that stop or end a loop: stop (a hook, or --force), cancel."""

from __future__ import annotations

from typing import Annotated

import typer

from akira_cli.cli.common import RootOption, TaskIdOption, exits
from akira_cli.cli.loop_cmd import app


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
    from akira_cli import api

    typer.echo(f"akira: {api.stop(root, task_id, force=force, save_state=save_state).line()}", err=True)
    return 0


@app.command("cancel")
@exits
def cancel(task_id: TaskIdOption, root: RootOption = None) -> int:
    """End a loop for good: status cancelled, state archived, task file left where it is."""
    from akira_cli import api

    typer.echo(f"akira: {api.cancel(root, task_id).line()}", err=True)
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
    from akira_cli import api

    undone = api.undo(root, task_id, step)
    for warning in undone.warnings:
        typer.echo(f"akira: warning: {warning}", err=True)
    typer.echo(f"akira: {undone.line()}", err=True)
    return 0
