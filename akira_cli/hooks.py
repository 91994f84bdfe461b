"""Stop hooks: `.hooks/stop_autonomous_loop_<id>.md`, or the workspace-wide one with front matter."""

from __future__ import annotations

import contextlib
from pathlib import Path

import yaml

from akira_cli import safeyaml
from akira_cli.events import utcnow
from akira_cli.fileio import atomic_write, read_bounded
from akira_cli.state.models import LoopState
from akira_cli.templates import render
from akira_cli.workspace import Workspace, command_line

FRONT_MATTER_BYTES = 16_000


def front_matter(path: Path) -> dict[str, object]:
    """A hook's front matter; anything odd (binary, huge, an alias bomb) reads as none."""
    try:
        text = read_bounded(path, FRONT_MATTER_BYTES).decode("utf-8", "replace")
    except OSError:
        return {}
    if not text.startswith("---"):
        return {}
    head = text[3:].split("\n---", 1)[0]
    try:
        data = safeyaml.load(head, max_bytes=FRONT_MATTER_BYTES)
    except (yaml.YAMLError, safeyaml.BoundsError):
        return {}
    return data if isinstance(data, dict) else {}


def active_hook(workspace: Workspace, task_id: str) -> Path | None:
    """The hook that pauses this task, if any."""
    own = workspace.hook_path(task_id)
    if own.exists():
        return own
    shared = workspace.hook_path()
    if shared.exists():
        named = front_matter(shared).get("task_id")
        if not named or (isinstance(named, str | int) and str(named) == task_id):
            return shared
    return None


def write_hook(workspace: Workspace, state: LoopState, reason: str = "manual") -> Path:
    step = state.current_step
    path = workspace.hook_path(state.task_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        path,
        render(
            "stop_hook.md",
            task_id=state.task_id,
            resume_cmd=command_line(workspace, "loop", "resume", "--task-id", state.task_id),
            created=utcnow(),
            reason=reason,
            reason_text="Stopped with `akira loop stop`." if reason == "manual" else reason,
            iteration=state.iteration,
            max_iterations=state.max_iterations,
            current_step=f"{step.step_id} - {step.description}" if step else "none",
            success_rate=f"{state.success_rate:.0%}",
        ).encode(),
    )
    return path


def remove_hooks(workspace: Workspace, task_id: str) -> list[Path]:
    removed = []
    while (hook := active_hook(workspace, task_id)) is not None:
        with contextlib.suppress(FileNotFoundError):
            hook.unlink()
        removed.append(hook)
    return removed
