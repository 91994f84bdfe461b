"""Finding a workspace's loops: the state store, a task by id, path or feature, the config."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.errors import AkiraError
from akira_cli.workspace import Workspace, command_line, in_quotes

if TYPE_CHECKING:
    from akira_cli.config import Config
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore


def workspace_and_config(
    root: str | Path | None,
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


def moved_away(workspace: Workspace, ref: str) -> str | None:
    """Where a task file named under Specs/ went when it is not there: into Done/ (its run
    completed) or Needs_Action/ (it waits for a person), as the rest of the line that says so."""
    for base in (Path.cwd(), workspace.root):
        named = Path(os.path.realpath((base / ref).expanduser()))
        if not named.is_relative_to(workspace.specs):
            continue
        inside = named.relative_to(workspace.specs)
        for area, why in ((workspace.done, "finished"), (workspace.needs_action, "waiting for a person")):
            for found in (area / inside, area / inside / "tasks.md"):
                if found.is_file():
                    where = workspace.shown(found)
                    return f"it is {why}, in {where}; move it back under Specs/ to work on it"
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
