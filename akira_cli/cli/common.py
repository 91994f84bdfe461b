"""What every command shares: its options, and its returned exit code made the process's."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec

import typer
from typer.core import TyperCommand

P = ParamSpec("P")

ROOT_HELP = (
    "Workspace folder. Default: $AKIRA_ROOT; else, for --task in .kiro/specs/, specs/ (spec-kit) or "
    "openspec/changes/, the repository that holds it; else the nearest folder from here upward that "
    "holds .state/, Specs/, .kiro/, .specify/ or openspec/; else the current folder."
)
TaskRootOption = Annotated[str | None, typer.Option("--root", help=ROOT_HELP)]
"""--root on a command that takes --task."""
RootOption = Annotated[
    str | None,
    typer.Option(
        "--root",
        help="Workspace folder. Default: $AKIRA_ROOT; else the nearest folder from here upward that holds "
        ".state/, Specs/, .kiro/, .specify/ or openspec/; else the current folder.",
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        readable=False,  # akira says what is wrong in one line, not Click's usage panel
        help="Extra config file layered over config/autonomous_loop.yaml; resume reuses the start's.",
    ),
]
"""--config on `loop start` and `loop resume`."""
FollowConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        readable=False,
        help="Extra config file layered over config/autonomous_loop.yaml (default: the run's own).",
    ),
]
"""--config on `pr follow`: the run's own --config, unless another is given."""
ExtraConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        readable=False,
        help="Extra config file layered over config/autonomous_loop.yaml.",
    ),
]
"""--config on the commands that run no loop (`reason`, `config show`)."""
TaskIdOption = Annotated[
    str, typer.Option("--task-id", help="Task id, the task file's path, or the feature name.")
]
JsonOption = Annotated[bool, typer.Option("--json", metavar="", help="Machine-readable output.")]
JsonLinesOption = Annotated[
    bool, typer.Option("--json", metavar="", help="One JSON object per event, one per line (JSON Lines).")
]


class PlainUsage(TyperCommand):
    """A command whose usage line names a required argument as the README writes it (`RUN_ID`,
    `TEXT`), not in the braces Typer puts around it (`{RUN_ID}`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [re.sub(r"^\{(.+)\}(\.\.\.)?$", r"\1\2", piece) for piece in pieces]


def exits(command: Callable[P, int]) -> Callable[P, None]:
    """Turns a command's returned exit code into the process exit code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        code = command(*args, **kwargs)
        if code:
            raise typer.Exit(code)

    return run
