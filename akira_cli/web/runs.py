"""The runs page: every run of the workspace, the one that needs a person first."""

from __future__ import annotations

from html import escape
from pathlib import Path
from xml.sax.saxutils import quoteattr

from akira_cli.api.models import LoopSummary, Progress
from akira_cli.api.watch_models import FleetRun
from akira_cli.api.watching import FleetLister
from akira_cli.web.html import duration, frame, link, money, run_link, status

ORDER = {"needs_action": 0, "failed": 1, "running": 2, "following": 2, "paused": 3, "interrupted": 3}
"""Which runs come first: the one that needs a person, then trouble, then what runs."""


def runs_page(root: Path, fleet: FleetLister | None = None) -> str:
    """The workspace's runs and (`fleet`) the fleet's, in one table, the one that needs a
    person first."""
    from akira_cli import api
    from akira_cli.api.watching import fleet_runs
    from akira_cli.errors import AkiraError

    board = api.status(root)
    loops = [loop for loop in getattr(board, "loops", [])]
    loops.sort(key=lambda loop: loop.task_id, reverse=True)
    shown: list[tuple[int, str]] = []
    for loop in loops:
        try:
            progress: Progress | None = api.progress(root, loop.task_id)
        except AkiraError:
            progress = None
        shown.append((ORDER.get(loop.status, 9), row(loop, progress)))
    remote = fleet_runs(fleet)
    runs = sorted(remote.runs, key=lambda run: run.updated_at, reverse=True)
    shown += [(ORDER.get(run.status, 9), fleet_row(run)) for run in runs]
    shown.sort(key=lambda item: item[0])  # stable: newest first within each kind
    rows = [text for _, text in shown]
    note = (
        f'<p id="fleet-refusal" class="muted">the fleet: akira: error: {escape(remote.refusal)}</p>'
        if remote.refusal
        else ""
    )
    corrupt = "".join(f"<li>{escape(path)}</li>" for path in getattr(board, "corrupt", []))
    body = (
        f'<h1>akira: runs</h1><p class="muted">{escape(str(root))}</p>'
        + (
            '<div class="scroll"><table id="runs"><thead><tr><th>run</th><th>task</th><th>status</th>'
            "<th>steps</th><th>verified / unverified / changed exam</th><th>cost</th>"
            '<th class="wide">tokens</th><th>time</th><th>pull request</th></tr></thead><tbody>'
            + "".join(rows)
            + "</tbody></table></div>"
            if rows
            else '<p class="muted">no runs yet: start one with <code>akira loop start --task FILE</code></p>'
        )
        + note
        + (f"<h2>State files that cannot be read</h2><ul>{corrupt}</ul>" if corrupt else "")
    )
    return frame("akira: runs", body)


def row(loop: LoopSummary, progress: Progress | None) -> str:
    steps = f"{progress.steps_done}/{progress.steps_total}" if progress else ""
    pr = loop.pull_request
    checks = f" ({escape(pr.checks)})" if pr and pr.checks else ""
    why = f'<div class="muted">{escape(loop.stop_reason)}</div>' if loop.stop_reason else ""
    cells = [
        ("", run_link(loop.task_id)),
        ("task", f'{escape(loop.feature)}<div class="muted wide">{escape(loop.task_path)}</div>'),
        ("status", status(loop.status) + why),
        ("steps", steps),
        (
            "verified / unverified / changed exam",
            f"{loop.verified} / {loop.unverified} / {loop.changed_exam}",
        ),
        ("cost", money(loop.cost_usd)),
        ("tokens", f"{loop.tokens:,}"),
        ("time", duration(loop.duration_seconds)),
        ("pull request", link(pr.url) + checks if pr else ""),
    ]
    shown = "".join(
        f"<td{f' data-label={quoteattr(label)}' if label and text else ''}{WIDE.get(label, '')}>{text}</td>"
        for label, text in cells
    )
    return f'<tr class="run" data-task="{escape(loop.task_id)}">{shown}</tr>'


def fleet_row(run: FleetRun) -> str:
    """A run of the fleet: it has no page here (a worker elsewhere runs it), so it says what
    the fleet's database says: its worker, its step, its branch."""
    steps = f"{run.steps_done}/{run.steps_total}" if run.steps_total else ""
    said = run.message if run.status != "running" else ""
    why = f'<div class="muted">{escape(said[:200])}</div>' if said else ""
    where = ", ".join(
        part
        for part in (f"worker {run.worker}" if run.worker else "", f"step {run.step}" if run.step else "")
        if part
    )
    cells = [
        ("", f'{escape(run.run_id)} <span class="fleet">fleet</span>'),
        (
            "task",
            f'{escape(run.task or "")}<div class="muted wide">{escape(run.repo)}</div>'
            + (f'<div class="muted">{escape(where)}</div>' if where else ""),
        ),
        ("status", status(run.status) + why),
        ("steps", steps),
        ("verified / unverified / changed exam", ""),
        ("cost", money(run.cost_usd)),
        ("tokens", ""),
        ("time", ""),
        ("pull request", f"branch {escape(run.branch)}" if run.branch else ""),
    ]
    shown = "".join(
        f"<td{f' data-label={quoteattr(label)}' if label and text else ''}{WIDE.get(label, '')}>{text}</td>"
        for label, text in cells
    )
    return f'<tr class="run fleet-run" data-fleet="{escape(run.run_id)}">{shown}</tr>'


WIDE = {"tokens": ' class="wide"'}
"""Cells a phone leaves out."""
