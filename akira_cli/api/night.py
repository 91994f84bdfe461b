"""Reading verbs for a page that watches a run (`akira web`): the event log followed from a
byte offset, and the run's budget. They never take a lock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.api.lookup import load_task
from akira_cli.workspace import Workspace

if TYPE_CHECKING:
    from akira_cli.api.models import Budget, EventPage

MAX_READ = 8 * 1024 * 1024
"""At most this many bytes a call: a long log is read in pieces, each from where the last ended."""


def events(root: str | Path | None, task_id: str, offset: int = 0, limit: int = MAX_READ) -> EventPage:
    """The events of `task_id`'s log from byte `offset` (0: the start) to its last whole line,
    at most `limit` bytes of them, and the offset to read from next. A torn last line (a write
    under way, or a crash) is left for the next read; a line that is not an event is skipped."""
    from akira_cli.api.models import EventPage
    from akira_cli.api.views import live

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    path = workspace.log_path(state.task_id)
    found: list[dict[str, Any]] = []
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            start = offset if 0 <= offset <= size else 0  # a log replaced meanwhile is read anew
            handle.seek(start)
            data = handle.read(max(1, min(limit, MAX_READ)))
    except FileNotFoundError:
        start, data = 0, b""
    whole = data.rfind(b"\n") + 1
    for raw in data[:whole].splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            found.append(event)
    return EventPage(
        task_id=state.task_id, offset=start + whole, events=found, live=live(store, state.task_id)
    )


def budget(root: str | Path | None, task_id: str) -> Budget:
    """The run's token and cost caps, from the config it runs with."""
    from akira_cli.api.models import Budget
    from akira_cli.config import load_config

    workspace = Workspace.resolve(root)
    _, state = load_task(workspace, task_id)
    cfg = load_config(workspace.root, Path(state.config_file) if state.config_file else None)
    return Budget(
        task_id=state.task_id,
        max_tokens_total=cfg.budget.max_tokens_total,
        max_cost_usd=cfg.budget.max_cost_usd,
    )
