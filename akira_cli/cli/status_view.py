"""The status dashboard, as Rich tables for a terminal or plain text for a pipe."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Group


GROUPS = ("Active", "Paused", "Needs action", "Completed", "Failed", "Cancelled")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


COLUMNS = ("task", "status", "iteration", "success", "step", "duration")


def _cells(row: dict[str, Any]) -> list[str]:
    return [
        f"{row['task_id']}\n{row['feature']}",
        row["status"],
        f"{row['iteration']}/{row['max_iterations']}",
        f"{row['success_rate']:.0%}",
        row["current_step"] or row.get("following") or "-",
        _duration(row["duration_seconds"]),
    ]


def _notes(rows: list[dict[str, Any]], corrupt: list[str]) -> list[str]:
    notes = []
    systemic = sorted({sig for row in rows for sig in row["systemic_issues"]})
    if systemic:
        notes.append(f"Systemic issues (same error in several tasks): {', '.join(systemic)}")
    notes += [f"corrupt state file (not shown): {shlex.quote(str(path))}" for path in corrupt]
    bare = [row["task_id"] for row in rows if row.get("sandboxed") is False and row["group"] != "Completed"]
    if bare:
        notes.append(f"not sandboxed (steps run with all of your rights): {', '.join(bare)}")
    if not rows and not corrupt:
        notes.append("no loops yet; start one with 'akira loop start --task PATH'")
    return notes


PLAIN_COLUMNS = ("task", "feature", *COLUMNS[1:])
"""In a pipe one line per loop, the feature a column of its own: a `grep` of a line keeps both."""


def _plain_cells(row: dict[str, Any]) -> list[str]:
    first, *rest = _cells(row)
    return [*first.split("\n", 1), *rest]


def plain_dashboard(rows: list[dict[str, Any]], corrupt: list[str]) -> str:
    """The dashboard as plain aligned text, for a pipe or a file (no Rich to import)."""
    lines = ["Autonomous Loop Progress"]
    for group in GROUPS:
        members = [row for row in rows if row["group"] == group]
        if not members:
            continue
        table = [list(PLAIN_COLUMNS)] + [_plain_cells(row) for row in members]
        widths = [max(len(cells[i]) for cells in table) for i in range(len(PLAIN_COLUMNS))]
        lines += ["", f"{group} ({len(members)})"]
        for cells in table:
            lines.append("  ".join(p.ljust(w) for p, w in zip(cells, widths, strict=True)).rstrip())
    notes = _notes(rows, corrupt)
    return "\n".join(lines + ([""] if notes else []) + notes)


def dashboard(rows: list[dict[str, Any]], corrupt: list[str]) -> Group:
    """The dashboard for a terminal: Rich tables."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Any] = [Text("Autonomous Loop Progress", style="bold")]
    for group in GROUPS:
        members = [row for row in rows if row["group"] == group]
        if not members:
            continue
        table = Table(title=f"{group} ({len(members)})", title_justify="left", expand=False)
        table.add_column("task", no_wrap=True, min_width=22)
        for column in COLUMNS[1:]:
            table.add_column(column, no_wrap=column != "step")
        for row in members:
            table.add_row(*_cells(row))
        parts.append(table)
    style = {True: "red", False: "yellow"}
    parts += [Text(note, style=style[note.startswith("corrupt")]) for note in _notes(rows, corrupt)]
    return Group(*parts)
