"""What a page that watches runs reads besides a workspace's own runs (`akira web`): the
fleet's runs, through a lister the front end hands in (only `cli/fleet_cmd.py` knows the fleet),
and the running command's last output lines."""

from __future__ import annotations

import glob
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from akira_cli.errors import AkiraError

if TYPE_CHECKING:
    from akira_cli.api.watch_models import FleetRuns, LiveLines, Spending
    from akira_cli.workspace import Workspace

MAX_LINES = 200

FleetLister = Callable[[], list[dict[str, Any]] | None]
"""The fleet's runs as `fleet status --json` has them, one dict per run; None while there is no
fleet; an `AkiraError` when the fleet's database cannot be read (its one line is shown)."""


def fleet_runs(lister: FleetLister | None) -> FleetRuns:
    """The fleet's runs through `lister` (None: no fleet), their text masked of secrets."""
    from akira_cli.api.watch_models import FleetRun, FleetRuns
    from akira_cli.redaction import redact

    try:
        found = lister() if lister is not None else None
    except AkiraError as exc:
        return FleetRuns(configured=True, refusal=redact(str(exc)))
    if found is None:
        return FleetRuns(configured=False)
    runs = []
    for row in found:
        shown = {key: redact(value) if isinstance(value, str) else value for key, value in row.items()}
        runs.append(FleetRun.model_validate(shown))
    return FleetRuns(configured=True, runs=runs)


def spending(root: str | Path | None, task_id: str) -> Spending:
    """What each attempt of `task_id` spent: the journal's attempts (all of them) and those of
    the state file the journal does not hold yet. Never takes a lock."""
    from akira_cli.api.lookup import load_task
    from akira_cli.api.watch_models import AttemptSpend, Spending
    from akira_cli.workspace import Workspace

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    journal = store.history(state, frozenset({"attempt"})).attempts
    found = []
    for step_id in [*journal, *(step for step in state.steps if step not in journal)]:
        kept = journal.get(step_id, [])
        record = state.steps.get(step_id)
        if record is not None:
            missing = max(0, min(record.attempts_total - len(kept), len(record.attempts)))
            kept = kept + (record.attempts[len(record.attempts) - missing :] if missing else [])
        for attempt in kept:
            if attempt.finished_at is None:
                continue
            found.append(
                AttemptSpend(
                    step_id=attempt.step_id,
                    number=attempt.number,
                    iteration=attempt.iteration,
                    finished_at=attempt.finished_at,
                    seconds=attempt.duration_seconds,
                    tokens=attempt.usage.total_tokens,
                    cost_usd=round(attempt.usage.cost_usd, 6),
                )
            )
    found.sort(key=lambda attempt: attempt.finished_at)
    return Spending(task_id=state.task_id, attempts=found)


def live_path(workspace: Workspace, task_id: str) -> Path:
    """Where a run's running command's output goes as it comes (`live_output.py`)."""
    return workspace.log_path(task_id).with_suffix(".live")


def output(root: str | Path | None, task_id: str, lines: int = 20) -> LiveLines:
    """The last `lines` lines (at most 200) of the output of `task_id`'s running command (or
    of the last one, `ended`), masked of secrets; no command yet: none. Never takes a lock.
    While a `[P]` wave runs, each slot's commands have their own file: the one shown is a
    command still running, the one that wrote last (its `slot` said), else the last that ended."""
    from akira_cli.api.lookup import load_task
    from akira_cli.api.views import live
    from akira_cli.api.watch_models import LiveLines
    from akira_cli.live_output import tail_lines
    from akira_cli.redaction import redact
    from akira_cli.workspace import Workspace

    workspace = Workspace.resolve(root)
    store, state = load_task(workspace, task_id)
    main = live_path(workspace, state.task_id)
    count = max(1, min(lines, MAX_LINES))
    read = []
    for path in [main, *main.parent.glob(f"{glob.escape(main.stem)}.slot*{main.suffix}")]:
        number = path.stem.removeprefix(f"{main.stem}.slot")
        if (found := tail_lines(path, count)) is not None and (path == main or number.isdigit()):
            read.append((not found[2], written_at(path), None if path == main else int(number), found))
    running = live(store, state.task_id)
    if not read:
        return LiveLines(task_id=state.task_id, command=None, lines=[], ended=True, live=running)
    *_, slot, (command, shown, ended) = max(read, key=lambda seen: seen[:2])
    return LiveLines(
        task_id=state.task_id,
        command=redact(command),
        lines=[redact(line) for line in shown],
        ended=ended or not running,
        live=running,
        slot=slot,
    )


def written_at(path: Path) -> int:
    """When the file's command last wrote output (the file's change time)."""
    try:
        return path.stat().st_ctime_ns
    except OSError:
        return 0
