"""`tasks`: every task file in the workspace, where each spec tool keeps them, with its latest
loop."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from akira_cli.api.lookup import same_file, store_for
from akira_cli.workspace import Workspace

if TYPE_CHECKING:
    from akira_cli.api.models import TaskEntry, TaskList
    from akira_cli.state.models import LoopState
    from akira_cli.state.store import StateStore

LAYOUTS = (
    ("akira", "Specs/*/tasks.md"),
    ("akira", "Specs/*.md"),
    ("kiro", ".kiro/specs/*/tasks.md"),
    ("spec-kit", "specs/*/tasks.md"),
    ("openspec", "openspec/changes/*/tasks.md"),
)


def tasks(root: str | Path | None) -> TaskList:
    from akira_cli.api.models import TaskList

    workspace = Workspace.resolve(root)
    store = store_for(workspace)
    states = sorted(
        (state for _, state in store.scan() if state is not None),
        key=lambda state: state.started_at,
        reverse=True,
    )
    from akira_cli.api.origins import origins

    seen: set[Path] = set()
    listed: list[tuple[Path, str]] = []
    for layout, pattern in LAYOUTS:
        for path in sorted(workspace.root.glob(pattern)):
            if path.is_file() and path.resolve() not in seen and workspace.contains(path):
                seen.add(path.resolve())
                listed.append((path, layout))
    who = origins(workspace.root, [path for path, _ in listed])
    found = []
    for path, layout in listed:
        latest = next((s for s in states if same_file(Path(s.task_path), path)), None)
        found.append(entry(workspace, store, path, layout, latest, who[path]))
    return TaskList(tasks=found)


def entry(
    workspace: Workspace, store: StateStore, path: Path, layout: str, latest: LoopState | None, origin: str
) -> TaskEntry:
    from akira_cli.api.models import TaskEntry
    from akira_cli.api.summary import effective_status
    from akira_cli.errors import AkiraError
    from akira_cli.tasks.parser import parse_task_file

    done_ids = latest.completed_ids() if latest is not None else set()
    try:
        steps = parse_task_file(path).leaves(latest.include_optional if latest else False)
    except (AkiraError, OSError):
        steps = []
    return TaskEntry.model_validate(
        {
            "path": workspace.relative(path),
            "feature": workspace.feature_of(path),
            "layout": layout,
            "steps_done": sum(1 for step in steps if step.ticked or step.id in done_ids),
            "steps_total": len(steps),
            "task_id": latest.task_id if latest else None,
            "status": effective_status(store, latest) if latest else None,
            "origin": origin,
        }
    )
