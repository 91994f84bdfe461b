"""The task file as the loop reads it: parsed again only when it changed on disk."""

from __future__ import annotations

from pathlib import Path

from akira_cli.tasks.model import Step, TaskFile
from akira_cli.tasks.parser import parse_task_file
from akira_cli.tasks.writeback import set_box


class TaskSource:
    """Re-parses the task file before each iteration, unless it is unchanged since last time."""

    def __init__(self) -> None:
        self._key: tuple[int, int, int] | None = None
        self._task: TaskFile | None = None

    def load(self, path: Path) -> TaskFile:
        stat = path.stat()
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if key != self._key or self._task is None:
            self._task, self._key = parse_task_file(path), key
        return self._task

    def mark(self, path: Path, step_id: str, box: str) -> TaskFile:
        stat = path.stat()
        fresh = self._key == (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        self._task = set_box(path, step_id, box, known=self._task if fresh else None)
        stat = path.stat()
        self._key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        return self._task


def is_done(
    task: TaskFile, step: Step, include_optional: bool, completed: frozenset[str] | set[str] = frozenset()
) -> bool:
    """Ticked (a leaf), or every child done (a parent); `completed` counts as ticked."""
    if not step.children:
        return step.ticked or step.id in completed
    children = [task.get(child) for child in step.children]
    return all(
        is_done(task, child, include_optional, completed)
        for child in children
        if child is not None and (include_optional or not child.optional)
    )
