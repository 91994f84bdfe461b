"""What every command shares: --root, config layering, finding a task by id, path or feature."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec

import typer
from typer.core import TyperCommand

from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore


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


class PlainUsage(TyperCommand):
    """A command whose usage line names a required argument as SPEC 3 does (`RUN_ID`, `TEXT`),
    not in the braces Typer puts around it (`{RUN_ID}`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = super().collect_usage_pieces(ctx)
        return [re.sub(r"^\{(.+)\}(\.\.\.)?$", r"\1\2", piece) for piece in pieces]


def workspace_and_config(
    root: str | None,
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    task: Path | None = None,
) -> tuple[Workspace, Config]:
    from akira_cli.config import load_config

    workspace = Workspace.resolve(root, task)
    return workspace, load_config(workspace.root, config_file, overrides)


def store_for(workspace: Workspace) -> StateStore:
    from akira_cli.state.store import StateStore

    return StateStore(workspace.state_dir)


def find_path(workspace: Workspace, ref: str) -> Path | None:
    for base in (Path.cwd(), workspace.root):
        candidate = (base / ref).expanduser()
        if candidate.exists():
            return candidate.resolve()
    return None


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def resolve_task(workspace: Workspace, store: StateStore, ref: str) -> str:
    """A task id, the task file's path (wherever it is now), or the feature folder's name."""
    from akira_cli.state.models import TASK_ID_PATTERN

    if re.fullmatch(TASK_ID_PATTERN, ref) and store.exists(ref):
        return ref
    path = find_path(workspace, ref)
    scanned = list(store.scan())
    states = [state for _, state in scanned if state is not None]
    states.sort(key=lambda s: s.started_at, reverse=True)
    if path is not None:
        target = path / "tasks.md" if path.is_dir() else path
        for state in states:
            if same_file(Path(state.task_path), target):
                return state.task_id
    for state in states:
        if state.feature == ref:
            return state.task_id
    corrupt = [found for found, state in scanned if state is None]
    if corrupt:  # it may be the one asked for: say so, and how to see what is left of it
        task = corrupt[0].stem.removeprefix("autonomous_loop_")
        see = command_line(workspace, "loop", "state", "--task-id", task)
        raise AkiraError(
            f"no readable loop found for '{ref}'; the state file {workspace.shown(corrupt[0])} is corrupt "
            f"and may be it: run {in_quotes(see)} to quarantine it and learn how to restore it"
        )
    raise AkiraError(
        f"no loop found for '{ref}' (not a task id, task file or feature name); "
        "run 'akira loop status' to list loops"
    )


def load_task(workspace: Workspace, ref: str) -> tuple[StateStore, LoopState]:
    store = store_for(workspace)
    return store, store.load(resolve_task(workspace, store, ref))


def exits(command: Callable[P, int]) -> Callable[P, None]:
    """Turns a command's returned exit code into the process exit code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        code = command(*args, **kwargs)
        if code:
            raise typer.Exit(code)

    return run
