"""The runs page: every run of the workspace, the one that needs a person first."""

from __future__ import annotations

from html import escape
from pathlib import Path
from xml.sax.saxutils import quoteattr

from akira_cli.api.models import LoopSummary, Progress
from akira_cli.web.html import duration, frame, link, money, run_link, status

ORDER = {"needs_action": 0, "failed": 1, "running": 2, "following": 2, "paused": 3, "interrupted": 3}
"""Which runs come first: the one that needs a person, then trouble, then what runs."""


def runs_page(root: Path) -> str:
    from akira_cli import api
    from akira_cli.errors import AkiraError

    board = api.status(root)
    loops = [loop for loop in getattr(board, "loops", [])]
    loops.sort(key=lambda loop: loop.task_id, reverse=True)
    loops.sort(key=lambda loop: ORDER.get(loop.status, 9))
    rows = []
    for loop in loops:
        try:
            progress: Progress | None = api.progress(root, loop.task_id)
        except AkiraError:
            progress = None
        rows.append(row(loop, progress))
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
        f"<td{f' data-label={quoteattr(label)}' if label else ''}{WIDE.get(label, '')}>{text}</td>"
        for label, text in cells
    )
    return f'<tr class="run" data-task="{escape(loop.task_id)}">{shown}</tr>'


WIDE = {"tokens": ' class="wide"'}
"""Cells a phone leaves out."""
