"""`akira pr follow`: a finished run's pull request followed after the run."""

from __future__ import annotations

from typing import Annotated

import typer

from akira_cli.cli.common import FollowConfigOption, RootOption, TaskIdOption, exits
from akira_cli.workspace import Workspace

app = typer.Typer(help="The pull request a run opened.", no_args_is_help=True)


@app.command("follow")
@exits
def follow(
    task_id: TaskIdOption,
    detach: Annotated[bool, typer.Option("--detach", metavar="", help="Run in the background.")] = False,
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", metavar="", help="When a stop hook pauses it, exit 3 instead of waiting."),
    ] = False,
    config: FollowConfigOption = None,
    root: RootOption = None,
) -> int:
    """Fix the pull request's failing checks and answer its review comments until it is green."""
    from akira_cli import api
    from akira_cli.cli.loop_cmd import note, said

    run = api.follow(root, task_id, config=config, detach=detach, no_wait=no_wait, show=True, say=note)
    return said(run, lambda: Workspace.resolve(root))
